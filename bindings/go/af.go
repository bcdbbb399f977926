// Package af is the Go binding of libaf, a library that traces "LM programs"
// (string formatting, concatenation, matching, control flow, host functions,
// LM calls) into an IR that can be printed, transformed (Batch, Pullback,
// DCE, ...), compiled into a Program run synchronously, asynchronously
// (Future) or saved as a graph file, and called from any language.
//
//	eng, err := af.NewEngine() // libaf's context: host functions, routes, scheduler
//	...
//	out, err := eng.Call(ctx, prog, input) // ctx is a context.Context: cancellation, deadline
//
// The binding wraps the stable C API (capi/include/af/af.h) through cgo:
//
//   - libaf's context (af_context_t) is an *Engine, so that ctx is the
//     context.Context of Go convention. Engine.Call(ctx, fn, inputs...)
//     runs a *Program or an *IR and ends the run when ctx does. The former
//     names (Context, NewContext, Program.Run) remain as deprecated aliases.
//   - Every fallible call returns an error; a libaf failure is an *Error with
//     a Code (one of the Code* constants) and a cause chain (errors.As,
//     errors.Is and errors.Unwrap work through it). errors.Is matches the
//     Err* sentinels by code, and context.DeadlineExceeded / context.Canceled
//     for timeouts and cancellations. The error a host function or host
//     provider returned is in the chain itself, so errors.As finds it.
//   - Handles (*Engine, *Value, *IR, *Walk, *Program, *Future, *Provider,
//     *CancelToken) own a libaf reference. Call Close when done; a finalizer
//     releases a forgotten handle as a backstop. Close is idempotent and may
//     be called from several goroutines at once (the handle is freed once).
//     A method racing Close on the same handle never touches freed memory:
//     each method holds the handle open for its C calls, Close marks it
//     closed at once (later calls return the closed-handle error,
//     CodeInvalidArgument) and the last call in progress frees it. Close
//     never waits, so it may be called from a callback running inside a
//     call on the same handle. The borrowed Values a trace or host function
//     receives hold a reference of their own, closed when it returns, so a
//     use racing that return is safe in the same way. A run started with CallAsync keeps its
//     Engine, Program and inputs alive until it finishes; a promise of a
//     lazy Engine (and any Value holding one) keeps its Engine alive.
//   - Values and IRs are immutable and may be used from several goroutines at
//     once; an Engine serializes its own mutations.
//   - Tracing is per OS thread in libaf. Trace locks the calling goroutine to
//     its thread while the trace function runs; operations made by that
//     function (on its goroutine) are recorded into the trace. Operations
//     made by other goroutines are not. Run-time scopes are per OS thread
//     too: Engine.WithCancelScope and WithCancelContext (given a context
//     that can end) run their function on the calling goroutine locked to
//     its thread, so that eager LM and host calls made there end with
//     CodeCancelled when the token (or the context.Context) fires.
//   - Callbacks (host functions, host providers, progress) run on libaf
//     threads; each Go closure is held through a cgo.Handle that libaf's
//     destroy callback deletes exactly once. Host functions, host providers
//     and progress callbacks run on a goroutine of their own: a panic or a
//     runtime.Goexit (t.Fatal) in one is reported to libaf as an error and
//     never unwinds through libaf's frames.
//
// Building: cgo finds libaf's header and library through pkg-config (af.pc,
// installed by `cmake --install`; PKG_CONFIG_PATH=<prefix>/lib/pkgconfig for
// a non-system prefix). A CMake build tree has af-uninstalled.pc, which
// pkg-config prefers: PKG_CONFIG_PATH=<build dir> builds against that tree.
// Programs then find libaf.so where the loader looks (an installed prefix, or
// CGO_LDFLAGS="-Wl,-rpath,<libdir>"). See README.md.
package af

/*
#cgo pkg-config: af
#include <stdlib.h>
#include "af/af.h"
*/
import "C"

import (
	"strconv"
	"unsafe"
)

// Version is the "MAJOR.MINOR.PATCH" version of the loaded libaf.
func Version() string { return C.GoString(C.af_version()) }

// ABIVersion is the ABI version of the loaded libaf (AF_ABI_VERSION).
func ABIVersion() uint32 { return uint32(C.af_abi_version()) }

// OptionsJSON describes every option libaf reads from JSON options
// (af_options_json): {"af_context_new_with": [key...], "af_provider_new":
// {"echo": [key...], ...}, "af_provider_set_options": [key...]}, each key
// {"key", "kind", "default", "min", "max", "doc", "keys"}. NewEngineWith,
// the provider constructors and Provider.SetOptions take these keys.
func OptionsJSON() (string, error) {
	var b C.af_bytes_t
	if err := takeError(C.af_options_json(&b)); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// HeaderABIVersion is the ABI version of the af.h this package was built
// against; it must equal ABIVersion().
const HeaderABIVersion uint32 = C.AF_ABI_VERSION

// IsTracing reports whether the calling OS thread is inside a trace
// function (see Trace). Meaningful only on the goroutine running the trace
// function, which is locked to that thread.
func IsTracing() bool { return C.af_is_tracing() != 0 }

// emptyC is a valid pointer for zero-length strings: libaf receives
// (pointer, length) pairs and is never handed a NULL pointer.
var emptyC = C.CString("")

// cstr returns s as a (pointer, length) pair pointing into Go memory. The
// memory holds no Go pointers, so cgo allows passing it for the duration of
// one call; s must stay reachable until the call returns (it does: it is an
// argument of the caller).
func cstr(s string) (*C.char, C.size_t) {
	if len(s) == 0 {
		return emptyC, 0
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// goString copies n bytes at p into a Go string.
func goString(p *C.char, n C.size_t) string {
	if n == 0 || p == nil {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)))
}

// takeBytes copies an owned af_bytes_t into a Go string and frees it.
func takeBytes(b *C.af_bytes_t) string {
	s := goString((*C.char)(unsafe.Pointer(b.data)), b.len)
	C.af_bytes_free(b)
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }
