//! `mframe`: read and write messageframe frames by hand, send, receive and
//! route them over TCP, publish, subscribe, record and replay them through
//! NATS. The code is in the library (src/lib.rs).

fn main() -> std::process::ExitCode {
    mframe::main()
}
