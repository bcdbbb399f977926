//! libaf is found and linked by the `libaf-sys` crate (AF_LIB_DIR, the
//! `vendored` feature, or pkg-config); this script only writes its directory
//! as an rpath into this package's own tests and examples, so they run
//! outside Cargo too.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Some(dir) = env::var_os("DEP_AF_LIB_DIR") {
        if env::var("CARGO_CFG_TARGET_OS").unwrap_or_default() != "windows" {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.to_string_lossy());
        }
    }
}
