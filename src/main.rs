//! The `wavetrace` command line. All printing, thread-pool setup and exit codes live in `cli`.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
