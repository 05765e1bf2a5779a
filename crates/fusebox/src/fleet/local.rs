//! A throwaway `redis-server` on a free loopback port, for tests, examples
//! and benchmarks: started, stopped (SIGSTOP), resumed, killed and
//! restarted empty on the same port, killed when dropped.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that makes a missing `redis-server` a failure
/// instead of a skip (`.ci/run` sets it).
pub const REQUIRE_REDIS: &str = "FUSEBOX_REQUIRE_REDIS";

/// A `redis-server` process this program started, on `127.0.0.1`, with no
/// persistence (a restart starts empty). Killed when dropped.
///
/// # Examples
///
/// ```no_run
/// use fusebox::fleet::LocalRedis;
/// let Some(mut redis) = LocalRedis::start_or_skip("my test") else { return Ok(()) };
/// println!("{}", redis.url());
/// redis.kill();
/// redis.restart()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct LocalRedis {
    binary: PathBuf,
    port: u16,
    args: Vec<String>,
    /// Serves TLS only (`--tls-port`), see [`LocalRedis::start_tls`].
    tls: bool,
    child: Option<Child>,
}

/// Where `redis-server` is: on `PATH`, or where Debian puts it.
fn find_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([
            "/usr/bin".into(),
            "/usr/sbin".into(),
            "/usr/local/bin".into(),
        ])
        .map(|dir| dir.join("redis-server"))
        .find(|p| p.is_file())
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl LocalRedis {
    /// Starts one, or says why not: `Ok(None)` when `redis-server` is not
    /// installed.
    ///
    /// # Errors
    ///
    /// The server was found but did not start and answer within 5 s.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// if let Some(redis) = fusebox::fleet::LocalRedis::start()? {
    ///     println!("redis on port {}", redis.port());
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start() -> io::Result<Option<LocalRedis>> {
        LocalRedis::start_with(&[])
    }

    /// [`LocalRedis::start`] with more `redis-server` arguments, e.g.
    /// `["--requirepass", "secret"]`.
    ///
    /// # Errors
    ///
    /// As [`LocalRedis::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let redis = fusebox::fleet::LocalRedis::start_with(&["--requirepass", "s3cret"])?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_with(args: &[&str]) -> io::Result<Option<LocalRedis>> {
        LocalRedis::start_as(args, false)
    }

    /// [`LocalRedis::start`] serving TLS only, with the server certificate
    /// `cert` and its key `key` (PEM files; clients are not asked for
    /// certificates). [`LocalRedis::url`] is then `rediss://`. The
    /// `redis-server` must be built with TLS (Debian's is).
    ///
    /// # Errors
    ///
    /// As [`LocalRedis::start`]; a server without TLS does not start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::path::Path;
    /// let redis = fusebox::fleet::LocalRedis::start_tls(Path::new("srv.crt"), Path::new("srv.key"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_tls(cert: &Path, key: &Path) -> io::Result<Option<LocalRedis>> {
        let (cert, key) = (cert.to_string_lossy(), key.to_string_lossy());
        let args = ["--tls-cert-file", &cert, "--tls-key-file", &key];
        LocalRedis::start_as(&[&args[..], &["--tls-auth-clients", "no"]].concat(), true)
    }

    fn start_as(args: &[&str], tls: bool) -> io::Result<Option<LocalRedis>> {
        let Some(binary) = find_binary() else {
            return Ok(None);
        };
        let mut last = None;
        for _ in 0..5 {
            // The port is free now; another process could take it before
            // the server binds it, so try a few.
            let mut redis = LocalRedis {
                binary: binary.clone(),
                port: free_port()?,
                args: args.iter().map(|a| a.to_string()).collect(),
                tls,
                child: None,
            };
            match redis.restart() {
                Ok(()) => return Ok(Some(redis)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("redis-server did not start")))
    }

    /// [`LocalRedis::start`] for a test: when `redis-server` is missing,
    /// prints one line saying `what` was skipped and returns `None`, unless
    /// `FUSEBOX_REQUIRE_REDIS=1`, when it panics. Panics if the server is
    /// there but does not start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let Some(redis) = fusebox::fleet::LocalRedis::start_or_skip("fleet example") else { return };
    /// ```
    pub fn start_or_skip(what: &str) -> Option<LocalRedis> {
        LocalRedis::start_with_or_skip(what, &[])
    }

    /// [`LocalRedis::start_or_skip`] with more `redis-server` arguments.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let redis = fusebox::fleet::LocalRedis::start_with_or_skip("auth", &["--requirepass", "s3cret"]);
    /// ```
    pub fn start_with_or_skip(what: &str, args: &[&str]) -> Option<LocalRedis> {
        match LocalRedis::start_with(args) {
            Ok(Some(r)) => Some(r),
            Ok(None) if std::env::var(REQUIRE_REDIS).is_ok_and(|v| v == "1") => {
                panic!("{what}: redis-server not found and {REQUIRE_REDIS}=1")
            }
            Ok(None) => {
                eprintln!(
                    "skipped {what}: redis-server not found (apt-get install redis-server; \
                     {REQUIRE_REDIS}=1 makes this a failure)"
                );
                None
            }
            Err(e) => panic!("{what}: redis-server did not start: {e}"),
        }
    }

    /// The port it listens on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let redis = fusebox::fleet::LocalRedis::start()?.unwrap();
    /// assert!(redis.port() > 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT` (`rediss://` for [`LocalRedis::start_tls`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let redis = fusebox::fleet::LocalRedis::start()?.unwrap();
    /// assert!(redis.url().starts_with("redis://127.0.0.1:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The process id, while running.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let redis = fusebox::fleet::LocalRedis::start()?.unwrap();
    /// assert!(redis.pid().is_some());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts the server (again) on the same port, empty, and waits until
    /// it accepts connections.
    ///
    /// # Errors
    ///
    /// It could not be spawned, or did not answer within 5 s.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut redis = fusebox::fleet::LocalRedis::start()?.unwrap();
    /// redis.kill();
    /// redis.restart()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        let port = self.port.to_string();
        let ports: &[&str] = if self.tls {
            &["--port", "0", "--tls-port", &port]
        } else {
            &["--port", &port]
        };
        let child = Command::new(&self.binary)
            .args(ports)
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .args(["--dir", &std::env::temp_dir().to_string_lossy()])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(io::Error::other(format!("redis-server exited: {status}")));
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill();
        Err(io::Error::other("redis-server did not answer within 5 s"))
    }

    /// Kills the server (SIGKILL): every key is lost.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut redis = fusebox::fleet::LocalRedis::start()?.unwrap();
    /// redis.kill();
    /// assert!(redis.pid().is_none());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.signal_pid(child.id(), "-CONT"); // a stopped process dies too
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let redis = fusebox::fleet::LocalRedis::start()?.unwrap();
    /// redis.pause();
    /// redis.resume();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause(&self) {
        if let Some(pid) = self.pid() {
            self.signal_pid(pid, "-STOP");
        }
    }

    /// Resumes a paused server (SIGCONT).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let redis = fusebox::fleet::LocalRedis::start()?.unwrap();
    /// redis.resume();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn resume(&self) {
        if let Some(pid) = self.pid() {
            self.signal_pid(pid, "-CONT");
        }
    }

    fn signal_pid(&self, pid: u32, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
