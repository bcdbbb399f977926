//! Finds libaf and tells Cargo how to link it. In order:
//!
//! 1. `AF_LIB_DIR`: a directory holding `libaf.so` (e.g. a CMake build's `lib/`).
//! 2. feature `bundled`: builds libaf from this source tree with CMake into
//!    `OUT_DIR` (needs cmake, a C++20 compiler and libaf's dependencies).
//! 3. pkg-config `af` (`af.pc`, installed by `cmake --install`; set
//!    `PKG_CONFIG_PATH=<prefix>/lib/pkgconfig` for a non-system prefix).
//! 4. this repository's `build/lib`, when it holds a libaf (development).
//!
//! Otherwise the build fails and says these ways. With the `static` feature
//! libaf.a is linked instead (with the libraries it needs), so a binary
//! carries libaf and starts anywhere.
//!
//! Otherwise (dynamic linking, the default): The library is also copied
//! into `OUT_DIR/lib` and that directory given to the linker: Cargo puts such
//! directories (inside the target dir) on the loader path of `cargo run` and
//! `cargo test` for every crate that depends on this one, so a dependent
//! binary starts without a hand-set rpath or LD_LIBRARY_PATH. A binary run
//! outside Cargo needs libaf where the loader looks (an installed prefix known
//! to ldconfig, or an rpath of the application's choosing: `DEP_AF_LIB_DIR`
//! tells a dependent's build script where libaf is).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=AF_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let repo = manifest.join("../../..");

    let found = from_env(&manifest)
        .or_else(|| env::var_os("CARGO_FEATURE_BUNDLED").map(|_| bundled(&repo, &out)))
        .or_else(from_pkg_config)
        .or_else(|| Some(repo.join("build/lib")).filter(|d| has_lib(d)));
    let Some(dir) = found else {
        panic!(
            "\n\nlibaf not found. Give it to af-sys in one of three ways:\n\
             \x20 1. AF_LIB_DIR=<dir holding libaf.so> (e.g. a CMake build's lib/),\n\
             \x20 2. the `bundled` feature (af-sys = {{ ..., features = [\"bundled\"] }}): builds libaf \
             from source with CMake,\n\
             \x20 3. an installed libaf that pkg-config finds: cmake --install <build> --prefix <p>, then \
             PKG_CONFIG_PATH=<p>/lib/pkgconfig.\n\n"
        );
    };
    if !has_lib(&dir) && env::var_os("CARGO_FEATURE_STATIC").is_none() {
        panic!("\n\nlibaf: {} holds no libaf.so (from AF_LIB_DIR or pkg-config)\n\n", dir.display());
    }
    let dir = dir.canonicalize().unwrap_or(dir);

    // Links to it in OUT_DIR: Cargo adds that directory to the loader path of
    // dependents' runs. (Links, not copies: a rebuilt libaf is picked up.)
    let local = out.join("lib");
    fs::create_dir_all(&local).expect("create OUT_DIR/lib");
    for entry in fs::read_dir(&dir).expect("read the libaf directory").flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("libaf.so") {
            let _ = fs::remove_file(local.join(&name));
            place(&entry.path(), &local.join(&name));
        }
    }
    // Relink when the library file itself changes.
    if let Ok(real) = dir.join("libaf.so").canonicalize() {
        println!("cargo:rerun-if-changed={}", real.display());
    }
    if env::var_os("CARGO_FEATURE_STATIC").is_some() {
        link_static(&dir);
        return;
    }
    println!("cargo:rustc-link-search=native={}", local.display());
    println!("cargo:rustc-link-lib=dylib=af");
    if env::var("CARGO_CFG_TARGET_OS").unwrap_or_default() != "windows" {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", local.display());
    }
    // DEP_AF_LIB_DIR for the build scripts of dependents.
    println!("cargo:lib_dir={}", local.display());
    println!("cargo:rustc-env=AF_SYS_LIB_DIR={}", local.display());
}

fn has_lib(dir: &Path) -> bool {
    dir.join("libaf.so").exists()
}

fn from_env(manifest: &Path) -> Option<PathBuf> {
    let d = PathBuf::from(env::var_os("AF_LIB_DIR").filter(|d| !d.is_empty())?);
    Some(if d.is_relative() { manifest.join(d) } else { d })
}

fn from_pkg_config() -> Option<PathBuf> {
    let out = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(["--variable=libdir", "af"])
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !dir.is_empty()).then(|| PathBuf::from(dir))
}

fn bundled(repo: &Path, out: &Path) -> PathBuf {
    let build = out.join("libaf-build");
    let run = |args: &[&str]| {
        let status = Command::new("cmake").args(args).status().expect("run cmake (needed by the bundled feature)");
        assert!(status.success(), "cmake {args:?} failed");
    };
    let (src, b) = (repo.to_str().expect("utf-8 path"), build.to_str().expect("utf-8 path"));
    run(&["-S", src, "-B", b, "-DCMAKE_BUILD_TYPE=Release", "-DAF_BUILD_TESTS=OFF", "-DAF_BUILD_BENCH=OFF"]);
    run(&["--build", b, "--target", "af_shared", "-j2"]);
    println!("cargo:rerun-if-changed={}", repo.join("capi").display());
    println!("cargo:rerun-if-changed={}", repo.join("core").display());
    build.join("lib")
}

#[cfg(unix)]
fn place(from: &Path, to: &Path) {
    std::os::unix::fs::symlink(from, to).expect("link libaf into OUT_DIR");
}

#[cfg(not(unix))]
fn place(from: &Path, to: &Path) {
    fs::copy(from, to).expect("copy libaf into OUT_DIR");
}

/// Links libaf.a and what it needs: the private libraries of af.pc when
/// pkg-config knows af, else the ones libaf is built with.
fn link_static(dir: &Path) {
    if !dir.join("libaf.a").exists() {
        panic!("\n\nlibaf: the `static` feature needs {}/libaf.a\n\n", dir.display());
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=af");
    let from_pc = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(["--static", "--libs-only-l", "af"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok());
    let libs: Vec<String> = match from_pc {
        Some(flags) => flags
            .split_whitespace()
            .filter_map(|f| f.strip_prefix("-l"))
            .filter(|l| *l != "af")
            .map(String::from)
            .collect(),
        None => ["simdjson", "zstd", "curl", "stdc++", "m", "pthread"].map(String::from).to_vec(),
    };
    for l in libs {
        println!("cargo:rustc-link-lib=dylib={l}");
    }
    println!("cargo:lib_dir={}", dir.display());
    println!("cargo:rustc-env=AF_SYS_LIB_DIR={}", dir.display());
}
