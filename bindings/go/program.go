package af

/*
#include <stdint.h>
#include <stdlib.h>
#include "af/af.h"

void afgo_set_progress(af_run_options_t* o, uintptr_t handle);
void afgo_set_stream(af_run_options_t* o, uintptr_t handle);
af_error_t* afgo_future_on_done(af_future_t* f, uintptr_t handle);
*/
import "C"

import (
	"context"
	"runtime"
	"runtime/cgo"
	"time"
	"unsafe"
)

// Program is a compiled IR for the dataflow executor: every equation starts
// the moment its inputs exist and independent LM calls run concurrently. It
// is immutable and may be run from several goroutines at once. Close it
// when done (a finalizer frees a forgotten one).
type Program struct {
	ptr cPtr[*C.af_program_t] // guarded: freed once closed and no use is in progress
}

// Compile compiles ir (validate, DCE, CSE, plan). CodeInvalidArgument if the
// IR does not validate.
func Compile(eng *Engine, ir *IR) (*Program, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ip, err := ir.acquire()
	if err != nil {
		return nil, err
	}
	defer ir.release()
	var out *C.af_program_t
	e := C.af_compile(cp, ip, &out)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newProgram(out), nil
}

func newProgram(p *C.af_program_t) *Program {
	prog := &Program{}
	prog.ptr.init(p)
	runtime.SetFinalizer(prog, (*Program).Close)
	return prog
}

// Close releases the program's reference. Idempotent.
func (p *Program) Close() {
	if p == nil {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if p.ptr.Close(freeProgram) {
		runtime.SetFinalizer(p, nil)
	}
}

func freeProgram(p *C.af_program_t) { C.af_program_free(p) }

// Clone returns a new handle to the same program.
func (p *Program) Clone() (*Program, error) {
	pp, err := p.acquire()
	if err != nil {
		return nil, err
	}
	defer p.release()
	out := newProgram(C.af_program_clone(pp))
	return out, nil
}

// acquire holds p open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed Program. Release it with release.
func (p *Program) acquire() (*C.af_program_t, error) {
	if p != nil {
		if pp, ok := p.ptr.Acquire(); ok {
			return pp, nil
		}
	}
	return nil, errClosed("program")
}

// release ends a use begun by a successful acquire.
func (p *Program) release() { p.ptr.Release(freeProgram) }

// RunOptions are the options of a run; the zero value (or nil) is the
// default.
type RunOptions struct {
	// KeepGoing: a failure does not cancel the rest; each failed output
	// leaf becomes {"error": {"code", "name", "message"}}.
	KeepGoing bool
	// Profile records a profile (Future.Profile).
	Profile bool
	// ItemErrors: in a batched program, an item that fails becomes its
	// error value in every output list; the other items complete (their
	// LM calls are not cancelled).
	ItemErrors bool
	// Timeout fails the run with CodeTimeout after this long (0 = none).
	Timeout time.Duration
	// ProfilePath: where to write the profile as Chrome trace JSON.
	ProfilePath string
	// Progress is called from libaf threads (never concurrently for one
	// run) with done and total equations; it must be quick.
	Progress func(done, total uint64)
	// Cancel: triggering it ends the run with CodeCancelled.
	Cancel *CancelToken
	// Summary records the run summary of a CallAsync run for
	// Future.Summary; a blocking call gets it from CallWithSummary.
	Summary bool
	// Stream receives LM replies as they arrive, from libaf threads (never
	// concurrently for one run): the equation's index, the batch item and
	// the next piece of text, or restart (text "") when what that equation
	// and item streamed so far does not count. It must be quick. The run's
	// result is the same as without it.
	Stream func(eqn uint32, item uint64, text string, restart bool)
	// StreamTag: only LM equations carrying this tag stream ("" = all).
	StreamTag string
	// MaxValueBytes is the largest value one equation may build, in bytes
	// (a format or concat result, ...; 0 = libaf's default, 1 GiB). Past it
	// the equation fails with CodeOutOfMemory, naming the primitive and the
	// size, before it allocates.
	MaxValueBytes uint64
	// JournalPath: where the run keeps its journal ("" = none). A journal is
	// a SQLite file that records each LM call the run completes (committed
	// before the call's result is used): a later run of the same program on
	// the same inputs with the same journal answers every call recorded
	// there from it, without reaching the provider, and asks the providers
	// only the rest, so a run that stopped at any point (a crash, a kill, a
	// cancel) resumes where it stopped. Host functions run again. It is
	// created when missing (with missing parent directories) with mode
	// 0600: it holds the LM replies in clear. A journal belongs to
	// one program and one list of inputs: another's fails the run at its
	// start with CodeInvalidArgument; a file that is not a journal (or is
	// corrupt), with CodeFormat; one that cannot be created or opened, with
	// CodeIO. Program runs only: Engine.EvalWith refuses it
	// (CodeInvalidArgument). See JournalSummaryJSON and JournalCompact.
	JournalPath string
}

// cOptions fills a C options struct (in C memory: it holds C pointers) for
// o. free releases what it holds unless libaf took it, and the cancel token
// it holds open for the call: call it once the C call has returned.
func (o *RunOptions) cOptions() (opts *C.af_run_options_t, free func()) {
	if o == nil {
		return nil, func() {}
	}
	opts = (*C.af_run_options_t)(C.calloc(1, C.sizeof_af_run_options_t))
	opts.struct_size = C.uint32_t(C.sizeof_af_run_options_t)
	if o.KeepGoing {
		opts.flags |= C.AF_RUN_KEEP_GOING
	}
	if o.Profile {
		opts.flags |= C.AF_RUN_PROFILE
	}
	if o.Profile || o.ProfilePath != "" {
		hostProfiling.Store(true) // host calls serve ProfileEvent from now on
	}
	if o.ItemErrors {
		opts.flags |= C.AF_RUN_ITEM_ERRORS
	}
	if o.Summary {
		opts.flags |= C.AF_RUN_SUMMARY
	}
	if o.Timeout > 0 {
		ms := o.Timeout.Milliseconds()
		if ms == 0 {
			ms = 1
		}
		opts.timeout_ms = C.uint64_t(ms)
	}
	opts.max_value_bytes = C.uint64_t(o.MaxValueBytes)
	if o.ProfilePath != "" {
		opts.profile_path = C.CString(o.ProfilePath)
		opts.profile_path_len = C.size_t(len(o.ProfilePath))
	}
	// A closed token stops nothing: the run goes without one, as before.
	tok := o.Cancel // read once: the token held is the token released
	if p, err := tok.acquire(); err == nil {
		opts.cancel = p // the run takes its own reference during the call
	} else {
		tok = nil
	}
	if o.Progress != nil {
		// libaf runs progress_destroy (deleting the handle) exactly once,
		// also when the call fails.
		C.afgo_set_progress(opts, C.uintptr_t(cgo.NewHandle(o.Progress)))
	}
	if o.Stream != nil {
		// Deleted by libaf's stream_destroy, exactly once.
		C.afgo_set_stream(opts, C.uintptr_t(cgo.NewHandle(o.Stream)))
	}
	if o.StreamTag != "" {
		opts.stream_tag = C.CString(o.StreamTag)
		opts.stream_tag_len = C.size_t(len(o.StreamTag))
	}
	if o.JournalPath != "" {
		opts.journal_path = C.CString(o.JournalPath)
		opts.journal_path_len = C.size_t(len(o.JournalPath))
	}
	return opts, func() {
		C.free(unsafe.Pointer(opts.profile_path))
		C.free(unsafe.Pointer(opts.stream_tag))
		C.free(unsafe.Pointer(opts.journal_path))
		C.free(unsafe.Pointer(opts))
		if tok != nil {
			tok.release()
		}
	}
}

// Call runs the program on inputs and waits, with nothing to stop it but
// its program; on a lazy engine it is recorded. Engine.Call is the form
// that takes a context.Context.
func (p *Program) Call(eng *Engine, inputs ...*Value) (*Value, error) {
	return p.CallWith(eng, nil, inputs...)
}

// CallWith runs the program with options and waits (RunOptions.Cancel or
// Timeout stop it). Engine.CallWith is the form that takes a
// context.Context.
func (p *Program) CallWith(eng *Engine, opts *RunOptions, inputs ...*Value) (*Value, error) {
	if opts != nil && opts.Summary {
		return nil, NewError(CodeInvalidArgument, "RunOptions.Summary records an asynchronous run's "+
			"summary (Future.Summary); a blocking call gets it from CallWithSummary")
	}
	out, _, err := p.call(eng, opts, false, inputs)
	return out, err
}

// CallWithSummary runs the program with options and waits, and returns the
// run summary beside the result: per model calls, tokens, retries, time
// queued and in flight, and the wall time, as JSON (af.h "Run summaries").
// A failed run has one too; it is "" when nothing ran (invalid inputs).
// opts.Summary is not needed.
func (p *Program) CallWithSummary(eng *Engine, opts *RunOptions, inputs ...*Value) (*Value, string, error) {
	o := RunOptions{}
	if opts != nil {
		o = *opts
	}
	o.Summary = false
	return p.call(eng, &o, true, inputs)
}

// call runs and waits; with summarize, the summary libaf wrote (opts is
// then non-nil).
func (p *Program) call(eng *Engine, opts *RunOptions, summarize bool, inputs []*Value) (*Value, string, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, "", err
	}
	defer eng.release()
	pp, err := p.acquire()
	if err != nil {
		return nil, "", err
	}
	defer p.release()
	ps, held, err := acquireValues(inputs)
	if err != nil {
		return nil, "", err
	}
	defer releaseValues(held)
	co, free := opts.cOptions()
	defer free()
	var summary *C.af_bytes_t
	if summarize { // in C memory: the options struct points at it
		summary = (*C.af_bytes_t)(C.calloc(1, C.sizeof_af_bytes_t))
		defer C.free(unsafe.Pointer(summary))
		co.summary = summary
	}
	var out *C.af_value_t
	var e *C.af_error_t
	if opts == nil { // the plain call (on a lazy engine: recorded, not run)
		e = C.af_program_call(cp, pp, cArray(ps), C.size_t(len(ps)), &out)
	} else {
		e = C.af_program_call_with(cp, pp, cArray(ps), C.size_t(len(ps)), co, &out)
	}
	s := ""
	if summary != nil && summary.data != nil {
		s = takeBytes(summary)
	}
	v, err := eng.takeResult(e, out, held)
	return v, s, err
}

// Run runs the program and waits, cancelling the run when goctx is done
// (a deadline too: the error is then CodeCancelled). opts.Cancel, if set,
// is replaced by a token tied to goctx.
//
// Deprecated: use eng.CallWith(goctx, p, opts, inputs...), which reports a
// deadline as CodeTimeout (context.DeadlineExceeded).
func (p *Program) Run(goctx context.Context, eng *Engine, opts *RunOptions, inputs ...*Value) (*Value, error) {
	o := RunOptions{}
	if opts != nil {
		o = *opts
	}
	o.Cancel = nil
	return eng.callContext(goctx, p, &o, false, inputs)
}

// CallAsync starts the program on eng's scheduler and returns at once.
// Input errors are returned here, run errors by Future.Wait. The run keeps
// eng, p and inputs reachable until it finishes, even if the caller drops
// every reference (the Future too); an explicit eng.Close during the run
// cancels it (libaf cancels a freed engine's runs in flight).
func (p *Program) CallAsync(eng *Engine, opts *RunOptions, inputs ...*Value) (*Future, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	pp, err := p.acquire()
	if err != nil {
		return nil, err
	}
	defer p.release()
	ps, held, err := acquireValues(inputs)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	co, free := opts.cOptions()
	defer free()
	var out *C.af_future_t
	var e *C.af_error_t
	if opts == nil {
		e = C.af_program_call_async(cp, pp, cArray(ps), C.size_t(len(ps)), &out)
	} else {
		e = C.af_program_call_async_with(cp, pp, cArray(ps), C.size_t(len(ps)), co, &out)
	}
	if err := takeError(e); err != nil {
		return nil, err
	}
	// The handle closes done when the run finishes, and libaf deletes it
	// after that: until then it pins what the run uses.
	pins := &runPins{done: make(chan struct{}), eng: eng, prog: p, inputs: inputs, opts: opts}
	if err := takeError(C.afgo_future_on_done(out, C.uintptr_t(cgo.NewHandle(pins)))); err != nil {
		C.af_future_cancel(out)
		C.af_future_free(out)
		return nil, err
	}
	f := &Future{done: pins.done}
	f.ptr.init(out)
	runtime.SetFinalizer(f, (*Future).Close)
	return f, nil
}

// runPins is what a run in flight needs from Go until it finishes. Without
// it, a caller that keeps only the Future (or nothing) would let the
// garbage collector finalize the Engine, and libaf would fail the run with
// "the context was freed while the run was in flight". The cgo.Handle that
// carries it to the completion callback is a GC root until libaf deletes
// it, after the run is done.
type runPins struct {
	done   chan struct{}
	eng    *Engine
	prog   *Program
	inputs []*Value
	opts   *RunOptions
}

// Future is a run in flight. Its methods may be called from several
// goroutines. Close it when done (closing does not cancel the run).
type Future struct {
	ptr  cPtr[*C.af_future_t] // guarded: freed once closed and no use is in progress
	done chan struct{}
}

// Done returns a channel closed when the run has finished.
func (f *Future) Done() <-chan struct{} { return f.done }

// Ready reports whether the run has finished (Wait will not block).
func (f *Future) Ready() bool {
	p, err := f.acquire()
	if err != nil {
		return false
	}
	defer f.release()
	r := C.af_future_ready(p) != 0
	return r
}

// Wait blocks until the run finishes and returns its output or error
// (CodeCancelled after Cancel, CodeTimeout, or the run's). It may be called
// again and gives the same result.
func (f *Future) Wait() (*Value, error) {
	p, err := f.acquire()
	if err != nil {
		return nil, err
	}
	defer f.release()
	var out *C.af_value_t
	e := C.af_future_wait(p, &out)
	return takeValue(e, out)
}

// WaitContext is Wait that cancels the run when goctx is done first.
func (f *Future) WaitContext(goctx context.Context) (*Value, error) {
	select {
	case <-f.done:
	case <-goctx.Done():
		f.Cancel()
	}
	return f.Wait()
}

// Cancel finishes the run with CodeCancelled and cancels its in-flight
// work. A no-op once finished.
func (f *Future) Cancel() {
	p, err := f.acquire()
	if err != nil {
		return
	}
	defer f.release()
	C.af_future_cancel(p)
}

// Profile is the run's profile as Chrome trace JSON (CodeInvalidArgument if
// the run was started without Profile or ProfilePath).
func (f *Future) Profile() (string, error) {
	p, err := f.acquire()
	if err != nil {
		return "", err
	}
	defer f.release()
	var b C.af_bytes_t
	e := C.af_future_profile(p, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// Summary returns the run summary as JSON (af.h "Run summaries"): complete
// once the run finished, so far before. CodeInvalidArgument if the run was
// started without RunOptions.Summary.
func (f *Future) Summary() (string, error) {
	p, err := f.acquire()
	if err != nil {
		return "", err
	}
	defer f.release()
	var b C.af_bytes_t
	e := C.af_future_summary_json(p, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// Close frees the handle (the run, if still going, completes unobserved).
// Idempotent, also from several goroutines at once. A method running when
// Close is called (a Wait, say) completes normally and the handle is freed
// when it returns; later calls return the closed-handle error.
func (f *Future) Close() {
	if f == nil {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if f.ptr.Close(freeFuture) {
		runtime.SetFinalizer(f, nil)
	}
}

func freeFuture(p *C.af_future_t) { C.af_future_free(p) }

// acquire holds f open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed Future. Release it with release.
func (f *Future) acquire() (*C.af_future_t, error) {
	if f != nil {
		if p, ok := f.ptr.Acquire(); ok {
			return p, nil
		}
	}
	return nil, errClosed("future")
}

// release ends a use begun by a successful acquire.
func (f *Future) release() { f.ptr.Release(freeFuture) }
