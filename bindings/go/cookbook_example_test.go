package af_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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
	eng := orPanic(af.NewEngine()) // libaf's context: host functions, routes, scheduler
	defer eng.Close()
	ctx := context.Background() // the context.Context blocking calls take first

	// A host tool: registered by name (a saved graph refers to the name only).
	shout := func(args []*af.Value) (*af.Value, error) {
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		return eng.ValueOf(strings.ToUpper(s))
	}
	orPanic(0, eng.RegisterFunction("shout", orPanic(eng.ValueOf("str")), shout))

	// Trace, with a switch on a match result.
	q := orPanic(eng.ValueOf("q"))
	pong := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.ValueOf("pong")
	}, q))
	loud := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.HostCall("shout", in[0])
	}, q))
	reply := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		isPing, err := eng.Match(in[0], orPanic(eng.ValueOf("ping")))
		if err != nil {
			return nil, err
		}
		key, err := eng.Format("{}", isPing) // "true" or "false"
		if err != nil {
			return nil, err
		}
		return eng.Switch(key, []af.Branch{{Name: "true", IR: pong}, {Name: "false", IR: loud}}, in[0])
	}, q))

	// Compile and run; batch runs the same program over a list.
	prog := orPanic(af.Compile(eng, reply))
	fmt.Println(orPanic(eng.Call(ctx, prog, orPanic(eng.ValueOf("ping")))))
	batched := orPanic(af.Compile(eng, orPanic(reply.Batch(eng, nil))))
	fmt.Println(orPanic(eng.Call(ctx, batched, orPanic(eng.ValueOf([]string{"ping", "hi"})))))

	// A slow echo model stands in for an LM: a deadline on ctx ends the run,
	// and an async run is cancelled through its Future.
	orPanic(0, eng.Route("*", orPanic(af.NewEchoProvider(`{"latency_ms": 5000}`))))
	ask := orPanic(af.Compile(eng, orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		msgs, err := eng.ValueOf([]map[string]any{{"role": "user", "content": in[0]}})
		if err != nil {
			return nil, err
		}
		return eng.LMCall(msgs, orPanic(eng.ValueOf("some-model")))
	}, q))))
	soon, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := eng.Call(soon, ask, orPanic(eng.ValueOf("hi")))
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	run := orPanic(ask.CallAsync(eng, nil, orPanic(eng.ValueOf("hi"))))
	run.Cancel()
	_, err = run.Wait()
	fmt.Println(errors.Is(err, af.ErrCancelled))

	// Save; load in another process (here another engine) and register its tools there.
	path := filepath.Join(os.TempDir(), fmt.Sprintf("af-cookbook-%d.afg", os.Getpid()))
	orPanic(0, prog.Save(path))
	other := orPanic(af.NewEngine())
	defer other.Close()
	orPanic(0, other.RegisterFunction("shout", orPanic(other.ValueOf("str")), func(args []*af.Value) (*af.Value, error) {
		s, _ := args[0].AsString()
		return other.ValueOf(s + "!")
	}))
	fmt.Println(orPanic(other.Call(ctx, orPanic(af.LoadProgram(other, path)), orPanic(other.ValueOf("hi")))))
	os.Remove(path)

	// Pullback: text feedback on the output flows back to each input.
	greet := orPanic(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.Format("Hello, {}!", in[0])
	}, q))
	back := orPanic(eng.Call(ctx, orPanic(greet.Pullback(eng)),
		orPanic(eng.ValueOf([]string{"Ada"})), orPanic(eng.ValueOf("be warmer"))))
	fmt.Println(orPanic(back.Index(0)), orPanic(orPanic(back.Index(1)).Len()))
	// cookbook:end

	// Output:
	// "pong"
	// ["pong","HI"]
	// true
	// true
	// "hi!"
	// "Hello, Ada!" 1
}
