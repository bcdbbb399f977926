//! Links libaf (the C API). The library directory comes from `AF_LIB_DIR`
//! (default: `<manifest dir>/../../build/lib`, the repo's CMake build) and is
//! also written as an rpath so `cargo test` finds `libaf.so` at run time.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=AF_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");

    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let dir = match env::var_os("AF_LIB_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_relative() {
                manifest_dir.join(d)
            } else {
                d
            }
        }
        _ => manifest_dir.join("../../build/lib"),
    };
    // An absolute, normalized path for the rpath (keeps the relative one if
    // the directory does not exist yet: linking will then say what is missing).
    let dir = dir.canonicalize().unwrap_or(dir);

    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=af");
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "windows" {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    // For crates that depend on this one (DEP_AF_LIB_DIR in their build.rs).
    println!("cargo:lib_dir={}", dir.display());
}
