//! Finds libaf and tells Cargo how to link it. In order:
//!
//! 1. `AF_LIB_DIR`: a directory holding `libaf.so` (e.g. a CMake build's `lib/`).
//! 2. feature `vendored` (or its earlier name `bundled`): builds libaf with
//!    CMake into `OUT_DIR` (needs cmake, a C++20 compiler and libaf's
//!    dependencies) from the sources packaged in `vendor/` (the published
//!    crate), else from this repository's tree (a build inside it).
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
    let repo = repository(&manifest);
    let wants_static = env::var_os("CARGO_FEATURE_STATIC").is_some();

    // The CMake build dir of a vendored build: its af-uninstalled.pc lists the
    // libraries libaf.a needs.
    let mut vendored_build = None;
    let found = from_env(&manifest)
        .or_else(|| {
            env::var_os("CARGO_FEATURE_VENDORED").map(|_| {
                let build = vendored(&manifest, repo.as_deref(), &out, wants_static);
                let lib = build.join("lib");
                vendored_build = Some(build);
                lib
            })
        })
        .or_else(from_pkg_config)
        .or_else(|| repo.as_ref().map(|r| r.join("build/lib")).filter(|d| has_lib(d)));
    let Some(dir) = found else {
        panic!(
            "\n\nlibaf not found. Give it to libaf-sys in one of three ways:\n\
             \x20 1. AF_LIB_DIR=<dir holding libaf.so> (e.g. a CMake build's lib/),\n\
             \x20 2. the `vendored` feature (libaf = {{ version = \"0.1\", features = [\"vendored\"] }}): \
             builds libaf from its bundled sources with CMake,\n\
             \x20 3. an installed libaf that pkg-config finds: cmake --install <build> --prefix <p>, then \
             PKG_CONFIG_PATH=<p>/lib/pkgconfig.\n\n"
        );
    };
    if !has_lib(&dir) && !wants_static {
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
    if wants_static {
        link_static(&dir, vendored_build.as_deref());
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

/// This repository's root, when the crate is built inside it (not from a
/// registry's copy): the CMake tree and `build/lib`.
fn repository(manifest: &Path) -> Option<PathBuf> {
    let root = manifest.join("../../..");
    (root.join("CMakeLists.txt").is_file() && root.join("capi/include/af/af.h").is_file()).then_some(root)
}

/// Builds libaf with CMake into `OUT_DIR/libaf-build` and returns that build
/// directory: from `vendor/` (the sources ../package.sh copies into the
/// packaged crate), else from the repository this crate sits in.
fn vendored(manifest: &Path, repo: Option<&Path>, out: &Path, wants_static: bool) -> PathBuf {
    let vendor = manifest.join("vendor");
    let src = if vendor.join("CMakeLists.txt").is_file() {
        vendor
    } else if let Some(repo) = repo {
        repo.to_path_buf()
    } else {
        panic!("\n\nlibaf-sys: the `vendored` feature needs libaf's sources in {}\n\n", vendor.display());
    };
    for part in ["CMakeLists.txt", "core", "capi", "schemas", "cmake"] {
        println!("cargo:rerun-if-changed={}", src.join(part).display());
    }
    let build = out.join("libaf-build");
    let run = |args: &[&str]| {
        let status = Command::new("cmake")
            .args(args)
            .status()
            .expect("run cmake (the `vendored` feature builds libaf with it)");
        assert!(status.success(), "cmake {args:?} failed");
    };
    let (s, b) = (src.to_str().expect("utf-8 path"), build.to_str().expect("utf-8 path"));
    run(&["-S", s, "-B", b, "-DCMAKE_BUILD_TYPE=Release", "-DAF_BUILD_TESTS=OFF", "-DAF_BUILD_BENCH=OFF"]);
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "2".into());
    let mut args = vec!["--build", b, "--parallel", &jobs, "--target", "af_shared"];
    if wants_static {
        args.push("af_static");
    }
    run(&args);
    build
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
/// pkg-config knows af (a vendored build's own af-uninstalled.pc first), else
/// the ones libaf is built with.
fn link_static(dir: &Path, vendored_build: Option<&Path>) {
    if !dir.join("libaf.a").exists() {
        panic!("\n\nlibaf: the `static` feature needs {}/libaf.a\n\n", dir.display());
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=af");
    let mut pkg_config = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()));
    if let Some(build) = vendored_build {
        pkg_config.env("PKG_CONFIG_PATH", build);
    }
    let from_pc = pkg_config
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
        None => ["simdjson", "zstd", "z", "curl", "re2", "sqlite3", "stdc++", "m", "pthread"].map(String::from).to_vec(),
    };
    for l in libs {
        println!("cargo:rustc-link-lib=dylib={l}");
    }
    println!("cargo:lib_dir={}", dir.display());
    println!("cargo:rustc-env=AF_SYS_LIB_DIR={}", dir.display());
}
