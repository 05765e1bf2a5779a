//! `fusebox-lab`: see the library's docs ([`fusebox_lab`]).

fn main() -> std::process::ExitCode {
    fusebox_lab::cli::main()
}
