package af

import (
	"context"
	"errors"
	"time"
)

// Callable is what Engine.Call runs: a *Program or an *IR.
type Callable interface {
	// callPlain is the call without options (af_program_call /
	// af_ir_call): on a lazy engine it is recorded, not run.
	callPlain(eng *Engine, inputs []*Value) (*Value, error)
	// program is what runs with options; owned tells the caller to Close it.
	program(eng *Engine) (p *Program, owned bool, err error)
}

func (p *Program) callPlain(eng *Engine, inputs []*Value) (*Value, error) {
	return p.CallWith(eng, nil, inputs...)
}

func (p *Program) program(*Engine) (*Program, bool, error) { return p, false, nil }

func (ir *IR) callPlain(eng *Engine, inputs []*Value) (*Value, error) {
	return ir.Call(eng, inputs...)
}

// program compiles ir through the engine's plan cache, as af_ir_call does.
func (ir *IR) program(eng *Engine) (*Program, bool, error) {
	p, err := Compile(eng, ir)
	return p, true, err
}

// Call runs fn (a *Program or an *IR) on inputs and waits for its output.
// The run ends when ctx does: a cancellation fails it with CodeCancelled
// (errors.Is(err, context.Canceled) holds), a deadline with CodeTimeout
// (errors.Is(err, context.DeadlineExceeded) holds), and in-flight LM
// requests are aborted. A ctx already done fails at once, running nothing.
//
// Inside a trace the call is recorded. On a lazy engine a call with a ctx
// that can never end (context.Background()) is recorded like any other
// operation and returns a promise; with a ctx that can end, it runs now, as
// nothing could stop a recorded call later.
func (eng *Engine) Call(ctx context.Context, fn Callable, inputs ...*Value) (*Value, error) {
	return eng.CallWith(ctx, fn, nil, inputs...)
}

// CallWith is Call with run options (nil = defaults; a call with options
// runs now on a lazy engine too). The run's timeout is the earlier of
// opts.Timeout and ctx's deadline. opts.Cancel may stop the run instead of
// ctx, but not with it: a ctx that can end and a Cancel token together are
// CodeInvalidArgument.
func (eng *Engine) CallWith(ctx context.Context, fn Callable, opts *RunOptions, inputs ...*Value) (*Value, error) {
	return eng.callContext(ctx, fn, opts, true, inputs)
}

// callContext runs fn, ended by ctx (see runContext).
func (eng *Engine) callContext(ctx context.Context, fn Callable, opts *RunOptions, deadlineTimes bool, inputs []*Value) (*Value, error) {
	if ctx == nil {
		return nil, &Error{Message: "Engine.Call: ctx is nil (pass context.Background())", code: CodeInvalidArgument}
	}
	if fn == nil {
		return nil, &Error{Message: "Engine.Call: fn is nil (a *Program or an *IR)", code: CodeInvalidArgument}
	}
	if ctx.Done() == nil && opts == nil {
		return fn.callPlain(eng, inputs)
	}
	var out *Value
	err := runContext(ctx, "Engine.CallWith", opts, deadlineTimes, func(o *RunOptions) error {
		p, owned, err := fn.program(eng)
		if err != nil {
			return err
		}
		if owned {
			defer p.Close()
		}
		out, err = p.CallWith(eng, o, inputs...)
		return err
	})
	return out, err
}

// runContext calls run with opts ended by ctx (what names the caller in
// errors): a cancellation triggers a cancel token; a deadline, with
// deadlineTimes, becomes the run's timeout (so the run fails with
// CodeTimeout), and otherwise triggers the token too. A ctx that can never
// end passes opts through unchanged (nil included); otherwise run gets a
// copy holding the token and the timeout.
func runContext(ctx context.Context, what string, opts *RunOptions, deadlineTimes bool, run func(o *RunOptions) error) error {
	if ctx == nil {
		return &Error{Message: what + ": ctx is nil (pass context.Background())", code: CodeInvalidArgument}
	}
	if ctx.Done() == nil {
		return run(opts)
	}
	if err := ctx.Err(); err != nil {
		return notStarted(err, deadlineTimes)
	}
	o := RunOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Cancel != nil {
		return &Error{Message: what + ": RunOptions.Cancel and a ctx that can end both stop the run: give one", code: CodeInvalidArgument}
	}
	if d, ok := ctx.Deadline(); ok && deadlineTimes {
		left := time.Until(d)
		if left <= 0 {
			return notStarted(context.DeadlineExceeded, deadlineTimes)
		}
		if o.Timeout == 0 || left < o.Timeout {
			o.Timeout = left
		}
	}
	token, err := NewCancelToken()
	if err != nil {
		return err
	}
	defer token.Close()
	o.Cancel = token
	ended := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(ended)
		if !deadlineTimes || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			token.Trigger()
		}
	})
	// The token is closed only once the callback cannot use it any more:
	// stopped before it started, or finished.
	defer func() {
		if !stop() {
			<-ended
		}
	}()
	return run(&o)
}

// notStarted is the error of a call whose ctx was done before it started:
// CodeTimeout for a deadline (with deadlineTimes), else CodeCancelled,
// caused by ctx's error.
func notStarted(ctxErr error, deadlineTimes bool) error {
	code := CodeCancelled
	if deadlineTimes && errors.Is(ctxErr, context.DeadlineExceeded) {
		code = CodeTimeout
	}
	return &Error{Message: "the run did not start: " + ctxErr.Error(), code: code, cause: ctxErr}
}
