//! The `wavetrace` command line. All printing, thread-pool setup and exit codes live in `cli`.

mod cli;

/// Large buffers (mesh, build, image) on transparent huge pages where Linux has them: fewer
/// page faults while building, fewer TLB misses while tracing (see `wavetrace::host`).
#[global_allocator]
static ALLOCATOR: wavetrace::host::HugePageAllocator = wavetrace::host::HugePageAllocator;

fn main() {
    std::process::exit(cli::main());
}
