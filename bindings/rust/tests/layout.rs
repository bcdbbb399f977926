//! The FFI declarations (`libaf::sys`, generated from `af.h` by
//! capi/abi/afabi.py) lay out as C does: struct sizes and field offsets and
//! constants as compiled Rust sees them, against a C compiler reading the
//! header. (The declarations themselves are checked by regeneration.)

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use libaf::sys;

fn header_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../capi/include")
}

/// Compiles and runs a C program printing `name=value` lines.
fn c_facts(body: &str) -> BTreeMap<String, String> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("layout");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("facts.c");
    let exe = dir.join("facts");
    std::fs::write(
        &src,
        format!(
            "#include <af/af.h>\n#include <stddef.h>\n#include <stdio.h>\n\
             #define P(name, v) printf(\"%s=%lld\\n\", name, (long long)(v))\n\
             int main(void) {{\n{body}\nreturn 0;\n}}\n"
        ),
    )
    .unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(cc)
        .arg("-std=c99")
        .arg("-I")
        .arg(header_dir())
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run the C compiler");
    assert!(st.success(), "compiling {}", src.display());
    let out = Command::new(&exe).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

#[test]
fn structs_and_constants_match_the_header() {
    let mut rust: Vec<(&str, i64)> = vec![
        ("sizeof(af_run_options_t)", size_of::<sys::af_run_options_t>() as i64),
        ("sizeof(af_cse_options_t)", size_of::<sys::af_cse_options_t>() as i64),
        ("sizeof(af_trace_options_t)", size_of::<sys::af_trace_options_t>() as i64),
        ("sizeof(af_bytes_t)", size_of::<sys::af_bytes_t>() as i64),
        ("sizeof(af_function_options_t)", size_of::<sys::af_function_options_t>() as i64),
        // `fn` is a Rust keyword: the field is `fn_`.
        ("offsetof(af_function_options_t, fn)", offset_of!(sys::af_function_options_t, fn_) as i64),
    ];
    macro_rules! off {
        ($t:ident, $($f:ident),*) => {$(
            rust.push((concat!("offsetof(", stringify!($t), ", ", stringify!($f), ")"),
                       offset_of!(sys::$t, $f) as i64));
        )*};
    }
    off!(af_run_options_t, struct_size, flags, timeout_ms, progress, progress_user_data,
         progress_destroy, profile_path, profile_path_len, cancel, summary, stream,
         stream_user_data, stream_destroy, stream_tag, stream_tag_len, max_value_bytes,
         journal_path, journal_path_len);
    off!(af_cse_options_t, struct_size, merge_nondeterministic);
    off!(af_trace_options_t, struct_size, static_mask, list_mask);
    off!(af_bytes_t, data, len);
    off!(af_function_options_t, struct_size, flags, async_fn, user_data, destroy, result_kinds);
    macro_rules! consts {
        ($($c:ident),*) => {$( rust.push((stringify!($c), sys::$c as i64)); )*};
    }
    consts!(AF_VERSION_MAJOR, AF_VERSION_MINOR, AF_VERSION_PATCH, AF_ABI_VERSION,
            AF_ERR_INVALID_ARGUMENT, AF_ERR_NOT_FOUND, AF_ERR_SCHEMA, AF_ERR_FORMAT, AF_ERR_VERSION,
            AF_ERR_PROVIDER, AF_ERR_TIMEOUT, AF_ERR_CANCELLED, AF_ERR_CALLBACK, AF_ERR_IO,
            AF_ERR_OUT_OF_MEMORY, AF_ERR_INTERNAL, AF_KIND_NULL, AF_KIND_BOOL, AF_KIND_INT,
            AF_KIND_FLOAT, AF_KIND_STR, AF_KIND_LIST, AF_KIND_DICT, AF_KIND_PLACEHOLDER,
            AF_WALK_DONE, AF_RUN_KEEP_GOING, AF_RUN_PROFILE, AF_RUN_ITEM_ERRORS, AF_RUN_SUMMARY,
            AF_IR_ANCESTORS,
            AF_IR_DESCENDANTS, AF_IR_DEEP, AF_FUNCTION_PURE, AF_FUNCTION_BLOCKING);
    let body: String = rust
        .iter()
        .map(|(name, _)| {
            let expr = name.replace("offsetof(", "offsetof(").replace("sizeof(", "sizeof(");
            format!("P(\"{name}\", {expr});\n")
        })
        .collect();
    let c = c_facts(&body);
    for (name, value) in &rust {
        assert_eq!(c.get(*name).map(String::as_str), Some(value.to_string().as_str()), "{name}");
    }
}
