package af_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"libaf.dev/af"
)

// orPanic is the cookbook's shortcut for error handling: a real program
// returns the error instead.
func orPanic[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The README's cookbook, compiled and run by go test (TestReadmeCookbookIsTheExample
// checks that README.md shows this very code).
func Example_cookbook() {
	// cookbook:begin
	ctx := orPanic(af.NewContext())
	defer ctx.Close()

	// A host tool: registered by name (a saved graph refers to the name only).
	shout := func(args []*af.Value) (*af.Value, error) {
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		return ctx.ValueOf(strings.ToUpper(s))
	}
	orPanic(0, ctx.RegisterFunction("shout", orPanic(ctx.ValueOf("str")), shout))

	// Trace, with a switch on a match result.
	q := orPanic(ctx.ValueOf("q"))
	pong := orPanic(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.ValueOf("pong")
	}, q))
	loud := orPanic(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.HostCall("shout", in[0])
	}, q))
	reply := orPanic(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		isPing, err := ctx.Match(in[0], orPanic(ctx.ValueOf("ping")))
		if err != nil {
			return nil, err
		}
		key, err := ctx.Format("{}", isPing) // "true" or "false"
		if err != nil {
			return nil, err
		}
		return ctx.Switch(key, []af.Branch{{Name: "true", IR: pong}, {Name: "false", IR: loud}}, in[0])
	}, q))

	// Compile and run; batch runs the same program over a list.
	prog := orPanic(af.Compile(ctx, reply))
	fmt.Println(orPanic(prog.Call(ctx, orPanic(ctx.ValueOf("ping")))))
	batched := orPanic(af.Compile(ctx, orPanic(reply.Batch(ctx, nil))))
	fmt.Println(orPanic(batched.Call(ctx, orPanic(ctx.ValueOf([]string{"ping", "hi"})))))

	// Run asynchronously, then cancel (a slow echo model stands in for an LM).
	orPanic(0, ctx.Route("*", orPanic(af.NewEchoProvider(`{"latency_ms": 5000}`))))
	ask := orPanic(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		msgs, err := ctx.ValueOf([]map[string]any{{"role": "user", "content": in[0]}})
		if err != nil {
			return nil, err
		}
		return ctx.LMCall(msgs, orPanic(ctx.ValueOf("some-model")))
	}, q))
	run := orPanic(orPanic(af.Compile(ctx, ask)).CallAsync(ctx, nil, orPanic(ctx.ValueOf("hi"))))
	run.Cancel()
	_, err := run.Wait()
	fmt.Println(errors.Is(err, af.ErrCancelled))

	// Save; load in another process (here another context) and register its tools there.
	path := filepath.Join(os.TempDir(), fmt.Sprintf("af-cookbook-%d.afg", os.Getpid()))
	orPanic(0, prog.Save(path))
	other := orPanic(af.NewContext())
	defer other.Close()
	orPanic(0, other.RegisterFunction("shout", orPanic(other.ValueOf("str")), func(args []*af.Value) (*af.Value, error) {
		s, _ := args[0].AsString()
		return other.ValueOf(s + "!")
	}))
	fmt.Println(orPanic(orPanic(af.LoadProgram(other, path)).Call(other, orPanic(other.ValueOf("hi")))))
	os.Remove(path)

	// Pullback: text feedback on the output flows back to each input.
	greet := orPanic(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Format("Hello, {}!", in[0])
	}, q))
	back := orPanic(orPanic(greet.Pullback(ctx)).Call(ctx,
		orPanic(ctx.ValueOf([]string{"Ada"})), orPanic(ctx.ValueOf("be warmer"))))
	fmt.Println(orPanic(back.Index(0)), orPanic(orPanic(back.Index(1)).Len()))
	// cookbook:end

	// Output:
	// "pong"
	// ["pong","HI"]
	// true
	// "hi!"
	// "Hello, Ada!" 1
}
