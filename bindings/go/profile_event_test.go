package af_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// A sync and a blocking host function mark the profile of the run calling
// them; outside a profiled run ProfileEvent does nothing, and bad arguments
// are refused anywhere.
func TestProfileEvent(t *testing.T) {
	eng := must(af.NewEngine())(t)
	defer eng.Close()
	elsewhere := make(chan error, 1)
	must(0, eng.RegisterFunction("marked", js(t, eng, `"str"`), func(args []*af.Value) (*af.Value, error) {
		if err := af.ProfileEvent("my-marker", `{"k":1}`); err != nil {
			return nil, err
		}
		// Not from another goroutine: nothing, and no error.
		go func() { elsewhere <- af.ProfileEvent("from-elsewhere", "") }()
		if err := <-elsewhere; err != nil {
			return nil, err
		}
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		return eng.ValueOf("seen " + s)
	}))(t)
	must(0, eng.RegisterFunctionBlocking("marked.blocking", js(t, eng, `"str"`), func(args []*af.Value) (*af.Value, error) {
		if err := af.ProfileEvent("my-blocking-marker", ""); err != nil {
			return nil, err
		}
		return args[0].Clone()
	}))(t)
	ir := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		a, err := eng.HostCall("marked", in[0])
		if err != nil {
			return nil, err
		}
		b, err := eng.HostCall("marked.blocking", in[0])
		if err != nil {
			return nil, err
		}
		return eng.Format("{}|{}", a, b)
	}, js(t, eng, `"x"`)))(t)
	defer ir.Close()
	p := must(af.Compile(eng, ir))(t)
	defer p.Close()

	f := must(p.CallAsync(eng, &af.RunOptions{Profile: true}, js(t, eng, `"a"`)))(t)
	defer f.Close()
	wantJSON(t, must(f.Wait())(t), `"seen a|a"`)
	profile := must(f.Profile())(t)
	for _, want := range []string{`"my-marker"`, `"ph":"i"`, `"k":1`, `"my-blocking-marker"`} {
		if !strings.Contains(profile, want) {
			t.Errorf("profile lacks %s: %s", want, profile)
		}
	}
	if strings.Contains(profile, "from-elsewhere") {
		t.Errorf("an event from another goroutine counted: %s", profile)
	}

	// A profile_path gets the same events.
	path := filepath.Join(t.TempDir(), "profile.json")
	wantJSON(t, must(p.CallWith(eng, &af.RunOptions{ProfilePath: path}, js(t, eng, `"b"`)))(t), `"seen b|b"`)
	if written := string(must(os.ReadFile(path))(t)); !strings.Contains(written, `"my-marker"`) {
		t.Errorf("profile file lacks my-marker: %s", written)
	}

	// A run without a profile, an eager call, no run at all: nothing, nil.
	wantJSON(t, must(p.Call(eng, js(t, eng, `"c"`)))(t), `"seen c|c"`)
	wantJSON(t, must(eng.HostCall("marked", js(t, eng, `"d"`)))(t), `"seen d"`)
	if err := af.ProfileEvent("my-marker", ""); err != nil {
		t.Fatalf("outside a run: %v", err)
	}
	if err := af.ProfileEvent("my-marker", `{"k":1}`); err != nil {
		t.Fatalf("outside a run: %v", err)
	}

	// Bad arguments: INVALID_ARGUMENT anywhere.
	wantCode(t, af.ProfileEvent("", ""), af.CodeInvalidArgument)
	wantCode(t, af.ProfileEvent("m", "[1]"), af.CodeInvalidArgument)
	wantCode(t, af.ProfileEvent("m", "{nope"), af.CodeInvalidArgument)
}

// Concurrent runs each get their own host functions' events.
func TestProfileEventConcurrentRuns(t *testing.T) {
	eng := must(af.NewEngine())(t)
	defer eng.Close()
	must(0, eng.RegisterFunction("mark", js(t, eng, `"str"`), func(args []*af.Value) (*af.Value, error) {
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		if err := af.ProfileEvent("marker-"+s, ""); err != nil {
			return nil, err
		}
		return args[0].Clone()
	}))(t)
	ir := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.HostCall("mark", in[0])
	}, js(t, eng, `"x"`)))(t)
	defer ir.Close()
	p := must(af.Compile(eng, ir))(t)
	defer p.Close()
	const runs = 16
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in, err := eng.ValueOf(fmt.Sprint(i))
			if err != nil {
				errs <- err
				return
			}
			defer in.Close()
			f, err := p.CallAsync(eng, &af.RunOptions{Profile: true}, in)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			if _, err := f.Wait(); err != nil {
				errs <- err
				return
			}
			profile, err := f.Profile()
			if err != nil {
				errs <- err
				return
			}
			if n := strings.Count(profile, `"marker-`); n != 1 || !strings.Contains(profile, fmt.Sprintf(`"marker-%d"`, i)) {
				errs <- fmt.Errorf("run %d: %d markers: %s", i, n, profile)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
