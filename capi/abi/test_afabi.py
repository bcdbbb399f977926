"""Tests of the ABI generator (capi/abi/afabi.py): a function added to af.h
reaches every raw layer by regeneration alone, and what the parser cannot
read, or reads wrong, fails. (That the committed layers are current is
tools/test.sh's `afabi.py --check`.)

Run: python3 -m unittest capi/abi/test_afabi.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import afabi  # noqa: E402

HEADER_TEXT = afabi.HEADER.read_text(encoding="utf-8")
CC = os.environ.get("CC", "cc")

NEW_FUNCTION = """
/* A function added for the test: one of each kind of parameter. */
AF_API af_error_t* af_test_added(af_context_t* ctx, const char* name, size_t len,
                                 const af_value_t* const* items, size_t n,
                                 const af_run_options_t* options, void (*destroy)(void*),
                                 af_value_t** out);
"""


def with_function(text: str, decl: str) -> str:
    """text with decl added at the end of af.h's declarations."""
    at = text.rindex("#ifdef __cplusplus")
    return text[:at] + decl + "\n" + text[at:]


class Generated(unittest.TestCase):
    def generate(self, header_text: str) -> Path:
        tmp = Path(tempfile.mkdtemp(prefix="afabi-"))
        self.addCleanup(shutil.rmtree, tmp)
        (tmp / "af").mkdir()
        (tmp / "af" / "af.h").write_text(header_text, encoding="utf-8")
        rc = afabi.main(["--header", str(tmp / "af" / "af.h"), "--out", str(tmp / "out")])
        self.assertEqual(rc, 0)
        return tmp

    def compile_check(self, include: Path, check: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CC, "-std=c11", "-Werror", "-fsyntax-only", "-I", str(include),
                               str(check)], capture_output=True, text=True)

    def test_every_function_is_parsed(self) -> None:
        abi = afabi.parse(HEADER_TEXT)
        self.assertEqual(len(abi.functions), HEADER_TEXT.count("\nAF_API "))
        self.assertIn("af_error_new_with", [f.name for f in abi.functions])
        deprecated = [f.name for f in abi.functions if f.deprecated]
        self.assertIn("af_value_str", deprecated)
        self.assertNotIn("af_value_str_new", deprecated)
        self.assertIn("af_cse_ex", deprecated)
        self.assertNotIn("af_sched", deprecated)  # a blank line ends a deprecated paragraph

    def test_an_added_function_reaches_every_raw_layer(self) -> None:
        tmp = self.generate(with_function(HEADER_TEXT, NEW_FUNCTION))
        out = tmp / "out"
        rust = (out / "bindings/rust/libaf-sys/src/sys.rs").read_text()
        self.assertIn("pub fn af_test_added(ctx: *mut af_context_t, name: *const c_char, len: usize, "
                      "items: *const *const af_value_t, n: usize, options: *const af_run_options_t, "
                      "destroy: af_destroy_fn, out: *mut *mut af_value_t) -> *mut af_error_t;", rust)
        cs = (out / "bindings/csharp/src/Native.cs").read_text()
        self.assertIn("public static extern IntPtr af_test_added(IntPtr ctx, byte[] name, UIntPtr len, "
                      "IntPtr[] items, UIntPtr n, ref AfRunOptions options, DestroyFn destroy, "
                      "out IntPtr output);", cs)
        # The Python layer is a module: load it and read the declaration.
        ns: dict[str, object] = {}
        exec(compile((out / "bindings/python/src/libaf/_abi.py").read_text(), "_abi.py", "exec"), ns)
        sigs = ns["SIGNATURES"]
        assert isinstance(sigs, dict)
        restype, argtypes = sigs["af_test_added"]
        self.assertEqual(len(argtypes), 8)
        self.assertIs(argtypes[5]._type_, ns["RunOptionsC"])  # type: ignore[attr-defined]
        self.assertIs(argtypes[6], ns["DESTROY_FN"])
        # and the C compiler agrees with the parse of the new header
        r = self.compile_check(tmp, out / "capi/abi/abi_check.c")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_c_check_catches_a_wrong_parse(self) -> None:
        # The check generated from af.h, compiled against a header whose
        # declaration differs, must not compile: the check is what proves the
        # parser read every prototype, struct and constant as the compiler does.
        tmp = self.generate(HEADER_TEXT)
        check = tmp / "out/capi/abi/abi_check.c"
        self.assertEqual(self.compile_check(tmp, check).returncode, 0)
        for old, new in [("uint64_t timeout_ms;", "uint32_t timeout_ms;"),
                         ("af_value_len(const af_value_t* v, size_t* out)",
                          "af_value_len(const af_value_t* v, uint32_t* out)"),
                         ("#define AF_ERR_IO 10", "#define AF_ERR_IO 13")]:
            self.assertIn(old, HEADER_TEXT)
            (tmp / "af/af.h").write_text(HEADER_TEXT.replace(old, new, 1))
            r = self.compile_check(tmp, check)
            self.assertNotEqual(r.returncode, 0, f"the check missed {new!r}")

    def test_what_the_parser_cannot_read_fails_with_its_line(self) -> None:
        for decl, what in [
            ("AF_API af_error_t* af_bad(struct mystery* m);", "unknown type"),
            ("AF_API af_error_t* af_bad(void (*cb)(int x));", "typedef"),
            ("#define AF_BAD (1 << 2)", "constant must be"),
            ("typedef int af_weird_t;", "does not know"),
        ]:
            text = with_function(HEADER_TEXT, decl)
            line = text[:text.index(decl)].count("\n") + 1
            with self.assertRaises(afabi.AbiError) as cm:
                afabi.parse(text)
            self.assertIn(what, str(cm.exception))
            self.assertIn(f"af.h:{line}:", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
