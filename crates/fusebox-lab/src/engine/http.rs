//! `[downstream] transport = "http"` in real mode: the downstream is an HTTP
//! server on 127.0.0.1 in a process of its own (the lab's binary, hidden
//! subcommand `http-downstream`), and each replica's workers call it through
//! the replica's own `reqwest` client (its own connection pool).
//!
//! As in the model, a call's fate is decided by its start time: the client
//! sends it (`x-lab-start-ns`, time since the run's origin, `x-lab-replica`,
//! `x-lab-healthy-ns`, the healthy latency drawn for the call from the
//! latency tail and distribution, and `x-lab-fault-key`, what its fault's
//! latency distribution draws it with), the server looks it up in the fault schedule, waits the
//! latency and answers 200, or 500 for a failing call; a hanging call gets no
//! answer before the client's timeout; a call in a `reset` fault has its
//! connection dropped without an answer after the fault's latency. The
//! client classifies 2xx as success, a timeout as a timeout, anything else
//! (5xx, refused, reset, a connect timeout) as an error.
//!
//! With `pool_max`, a gate of that many permits stands in front of each
//! client (reqwest's pool has no bound of its own); in a `no_accept` fault
//! the server stops accepting (told on its standard input) and listens with
//! a backlog of 1, so new connects time out.

use crate::scenario::{CallDraw, CallResult, Downstream, FaultOutcome, HttpConfig, Scenario};
use crate::sync::lock;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

static LAB_BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Runs the HTTP downstream from `path` (the `fusebox-lab` binary) instead of
/// the current executable: for tests and other programs that use the lab as
/// a library. The first call wins.
///
/// # Examples
///
/// ```
/// fusebox_lab::engine::use_lab_binary("/usr/local/bin/fusebox-lab");
/// ```
pub fn use_lab_binary(path: impl Into<PathBuf>) {
    let _ = LAB_BINARY.set(path.into());
}

/// What the parent sends the server on its standard input (JSON).
#[derive(serde::Serialize, serde::Deserialize)]
struct Setup {
    downstream: Downstream,
    /// How long a hanging call is held (past any client timeout).
    hang: Duration,
    /// The port to listen on (0, the default: any free one; a restart after
    /// a `down` fault takes the port it had).
    #[serde(default)]
    port: u16,
}

/// The server process of one run, and the client that calls it; the process
/// is killed when this is dropped.
pub(super) struct HttpDownstream {
    /// The server process (`None` while a `down` fault stops it).
    child: Mutex<Option<Child>>,
    binary: PathBuf,
    setup: Setup,
    /// One client (one connection pool) per replica.
    clients: Vec<reqwest::blocking::Client>,
    /// With `pool_max`: one gate per replica, in front of its client.
    gates: Option<Vec<Gate>>,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    url: String,
}

/// `pool_max` in front of a replica's client: reqwest's pool has no bound
/// on the connections it opens (it opens one whenever no idle one is
/// free), so a call takes one of `pool_max` permits before it is sent, and
/// holds it to its end (the calls in flight, each on a connection of its
/// own, are at most `pool_max`).
struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

/// How [`Gate::take`] went.
enum Taken {
    AtOnce,
    After,
    No,
}

impl Gate {
    /// Takes a permit, waiting until `deadline` at most.
    fn take(&self, deadline: Option<Instant>) -> Taken {
        let mut free = lock(&self.free);
        let mut taken = Taken::AtOnce;
        while *free == 0 {
            taken = Taken::After;
            free = match deadline {
                None => self.freed.wait(free).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Taken::No;
                    }
                    self.freed
                        .wait_timeout(free, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
        *free -= 1;
        taken
    }

    fn give(&self) {
        *lock(&self.free) += 1;
        self.freed.notify_one();
    }
}

/// Starts the server process with `setup`; returns it and the address it listens on.
fn spawn(binary: &PathBuf, setup: &Setup) -> Result<(Child, String), String> {
    let mut child = Command::new(binary)
        .arg("http-downstream")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {} http-downstream: {e}", binary.display()))?;
    // The setup on one line; the server's standard input stays open for
    // `pause` and `resume` (a `no_accept` fault's start and end).
    let mut text = serde_json::to_vec(setup).expect("plain data serializes");
    text.push(b'\n');
    let sent = child.stdin.as_mut().map(|stdin| stdin.write_all(&text));
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|out| BufReader::new(out).read_line(&mut line));
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_string);
    match (sent, read, addr) {
        (Some(Ok(())), Some(Ok(_)), Some(addr)) => Ok((child, addr)),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!(
                "the HTTP downstream did not start (it said {line:?})"
            ))
        }
    }
}

impl HttpDownstream {
    /// Starts the server for `scenario` and, for each replica, a client with
    /// `config`'s pool.
    pub(super) fn start(scenario: &Scenario, config: HttpConfig) -> Result<Self, String> {
        let binary = match LAB_BINARY.get() {
            Some(p) => p.clone(),
            None => {
                std::env::current_exe().map_err(|e| format!("cannot find the lab binary: {e}"))?
            }
        };
        let mut setup = Setup {
            downstream: scenario.downstream.clone(),
            hang: scenario.duration + Duration::from_secs(60),
            port: 0,
        };
        let (child, addr) = spawn(&binary, &setup)?;
        setup.port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let clients = (0..scenario.replicas())
            .map(|_| {
                reqwest::blocking::Client::builder()
                    .pool_max_idle_per_host(config.pool_max_idle)
                    .connect_timeout(config.connect_timeout)
                    .timeout(scenario.client.timeout)
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let gates = config.pool_max.map(|max| {
            (0..scenario.replicas())
                .map(|_| Gate {
                    free: Mutex::new(max),
                    freed: Condvar::new(),
                })
                .collect()
        });
        Ok(HttpDownstream {
            child: Mutex::new(Some(child)),
            binary,
            setup,
            clients,
            gates,
            timeout: scenario.client.timeout,
            connect_timeout: config.connect_timeout,
            url: format!("http://{addr}/call"),
        })
    }

    /// Stops the server process (a `down` fault begins): calls are refused.
    pub(super) fn stop(&self) {
        if let Some(mut child) = lock(&self.child).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on its port (a `down` fault ends); calls fail
    /// until it listens.
    pub(super) fn restart(&self) -> Result<(), String> {
        let mut slot = lock(&self.child);
        if slot.is_none() {
            *slot = Some(spawn(&self.binary, &self.setup)?.0);
        }
        Ok(())
    }

    /// A `no_accept` fault begins (`false`) or ends (`true`): the server
    /// stops or starts accepting connections.
    pub(super) fn accept(&self, on: bool) {
        if let Some(stdin) = lock(&self.child).as_mut().and_then(|c| c.stdin.as_mut()) {
            let _ = stdin.write_all(if on { b"resume\n" } else { b"pause\n" });
        }
    }

    /// One call, started at `start` (since the run's `origin`) by
    /// `replica`, of the draws `draw`: taking `draw.healthy` outside a
    /// fault (its draw from the latency tail and distribution), and its
    /// fault's latency drawn with `draw.fault_key`.
    ///
    /// The client's timeout counts from `start`: a call that waits for a
    /// connection that long times out without being sent.
    pub(super) fn call(
        &self,
        origin: Instant,
        start: Duration,
        replica: usize,
        draw: CallDraw,
    ) -> HttpCall {
        let since = |t: Instant| t.saturating_duration_since(origin);
        let gate = self.gates.as_ref().map(|g| &g[replica]);
        let mut waited = Duration::ZERO;
        if let Some(g) = gate {
            let deadline = self.timeout.map(|t| origin + start + t);
            match g.take(deadline) {
                Taken::AtOnce => {}
                Taken::After => waited = since(Instant::now()).saturating_sub(start),
                Taken::No => {
                    let end = since(Instant::now());
                    return HttpCall {
                        result: CallResult::Timeout,
                        waited: end.saturating_sub(start),
                        connect_failed: false,
                        end,
                    };
                }
            }
        }
        let mut request = self.clients[replica]
            .get(&self.url)
            // Its fate is decided when it is sent, as in the model.
            .header("x-lab-start-ns", (start + waited).as_nanos().to_string())
            .header("x-lab-replica", replica.to_string())
            .header("x-lab-healthy-ns", draw.healthy.as_nanos().to_string())
            .header("x-lab-fault-key", draw.fault_key.to_string());
        if let (Some(t), Some(_)) = (self.timeout, gate) {
            request = request.timeout(t.saturating_sub(waited));
        }
        let sent = request.send();
        // Its end, before its permit goes to the next call.
        let end = since(Instant::now());
        if let Some(g) = gate {
            g.give();
        }
        let (result, connect_failed) = match sent {
            Ok(r) if r.status().is_success() => (CallResult::Success, false),
            Ok(_) => (CallResult::Error, false),
            // A connect that failed at the connect timeout (a refused one
            // fails at once): an error, as in the model.
            Err(e) if e.is_connect() => {
                let timed_out = end - start - waited >= self.connect_timeout;
                (CallResult::Error, timed_out)
            }
            Err(e) if e.is_timeout() => (CallResult::Timeout, false),
            Err(_) => (CallResult::Error, false),
        };
        HttpCall {
            result,
            waited,
            connect_failed,
            end,
        }
    }
}

/// How one HTTP call went ([`HttpDownstream::call`]).
pub(super) struct HttpCall {
    pub(super) result: CallResult,
    /// Its wait for a permit of the pool's gate (`pool_max`), zero if one was free.
    pub(super) waited: Duration,
    /// Its connect timed out.
    pub(super) connect_failed: bool,
    /// When it ended, since the run's origin.
    pub(super) end: Duration,
}

impl Drop for HttpDownstream {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `http-downstream` subcommand: reads its setup (JSON) from standard
/// input, listens on 127.0.0.1 (a free port), prints `listening on ADDR`,
/// and answers calls until it is killed.
///
/// Each connection is served by hyper (HTTP/1.1, kept alive for the
/// client's pool); a call in a `reset` fault drops its connection after the
/// fault's latency, without an answer.
pub fn serve_downstream() -> Result<(), String> {
    let mut input = String::new();
    std::io::stdin()
        .read_line(&mut input)
        .map_err(|e| format!("cannot read the setup: {e}"))?;
    let setup: Setup = serde_json::from_str(&input).map_err(|e| format!("bad setup: {e}"))?;
    let setup = Arc::new(setup);
    // `pause` and `resume` lines: a `no_accept` fault's start and end.
    let (accepting, mut open) = tokio::sync::watch::channel(true);
    let keep = accepting.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines().map_while(Result::ok) {
            match line.trim() {
                "pause" => accepting.send_replace(false),
                "resume" => accepting.send_replace(true),
                _ => continue,
            };
        }
    });
    // With `no_accept` faults the listen backlog is short, as a server's
    // that stopped accepting fills up: the kernel then drops new
    // connections' SYNs, and their connects time out.
    let refuses = setup
        .downstream
        .faults
        .iter()
        .any(|f| f.outcome == FaultOutcome::NoAccept);
    let backlog = if refuses { 1 } else { 1024 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    rt.block_on(async move {
        let _keep = keep;
        let listen = || {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.set_reuseaddr(true)?;
            socket.bind((std::net::Ipv4Addr::LOCALHOST, setup.port).into())?;
            socket.listen(backlog)
        };
        let listener = listen().map_err(|e| format!("cannot listen: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        println!("listening on {addr}");
        let _ = std::io::stdout().flush();
        loop {
            if !*open.borrow_and_update() {
                let _ = open.changed().await;
                continue;
            }
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, _) = accepted.map_err(|e| format!("server: {e}"))?;
                    tokio::spawn(connection(stream, Arc::clone(&setup)));
                }
                _ = open.changed() => {}
            }
        }
    })
}

/// Serves one connection until the client closes it, or a call in a
/// `reset` fault drops it.
async fn connection(stream: tokio::net::TcpStream, setup: Arc<Setup>) {
    let drop_it = Arc::new(tokio::sync::Notify::new());
    let service = {
        let drop_it = Arc::clone(&drop_it);
        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let (setup, drop_it) = (Arc::clone(&setup), Arc::clone(&drop_it));
            async move {
                let status = answer(&setup, req.headers(), &drop_it).await;
                let mut response = hyper::Response::new(String::new());
                *response.status_mut() = status;
                Ok::<_, std::convert::Infallible>(response)
            }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    tokio::select! {
        _ = conn => {}
        // Dropping the connection closes the socket with no answer written.
        _ = drop_it.notified() => {}
    }
}

async fn answer(
    setup: &Setup,
    headers: &hyper::HeaderMap,
    drop_connection: &tokio::sync::Notify,
) -> hyper::StatusCode {
    use hyper::StatusCode;
    let num = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let Some(start) = num("x-lab-start-ns") else {
        return StatusCode::BAD_REQUEST;
    };
    let replica = num("x-lab-replica").unwrap_or(0) as usize;
    let start = Duration::from_nanos(start);
    let healthy = num("x-lab-healthy-ns").map_or(setup.downstream.latency, Duration::from_nanos);
    let draw = match num("x-lab-fault-key") {
        Some(fault_key) => CallDraw { healthy, fault_key },
        None => CallDraw::fixed(healthy),
    };
    // A `down` fault's calls fail at once: the lab stopped this process for
    // the fault, so only a call racing the restart gets here.
    let (wait, status) = match setup.downstream.answer_with(replica, start, draw) {
        (Some(latency), CallResult::Success) => (latency, StatusCode::OK),
        (Some(latency), _) => (latency, StatusCode::INTERNAL_SERVER_ERROR),
        (None, _) => (setup.hang, StatusCode::SERVICE_UNAVAILABLE),
    };
    tokio::time::sleep(wait).await;
    let reset = setup
        .downstream
        .fault_on(replica, start)
        .is_some_and(|f| f.outcome == FaultOutcome::Reset);
    if reset {
        drop_connection.notify_one();
        std::future::pending::<()>().await;
    }
    status
}
