package af

/*
#include "af/af.h"
*/
import "C"

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// ProfileEvent adds an instant event, a marker on the run's timeline
// ("cache miss", "page 3 fetched"), to the profile of the run calling the
// current host function. argsJSON is a JSON object shown with the event
// ("" = none).
//
// It counts when called from the body of a HostFunc (RegisterFunction or
// RegisterFunctionBlocking), on the goroutine the function was called on,
// while a run recording a profile (RunOptions.Profile or ProfilePath) calls
// it: the profile then has an event {"ph": "i", "cat": "host", "name",
// "args": {"eqn": .., "args": argsJSON}} on the track of the libaf thread
// that called the function. Anywhere else (no run, an eager HostCall, a run
// without a profile, another goroutine, an AsyncHostFunc, which runs after
// libaf's call has returned) it does nothing and returns nil.
// CodeInvalidArgument: name empty or not UTF-8, argsJSON malformed or not an
// object.
func ProfileEvent(name, argsJSON string) error {
	if hostProfiling.Load() {
		if events, ok := hostCalls.Load(goid()); ok {
			reply := make(chan *C.af_error_t, 1)
			events.(chan profileEvent) <- profileEvent{name, argsJSON, reply}
			return takeError(<-reply)
		}
	}
	return takeError(recordProfileEvent(name, argsJSON))
}

// libaf finds the run a marker belongs to by the thread calling
// af_profile_event: the libaf thread running the host call. A HostFunc
// runs on a goroutine of its own (runGuarded), never on that thread (the
// callback's goroutine is locked to it), so ProfileEvent on the function's
// goroutine hands its event to the callback, which records it on libaf's
// thread while it waits for the function.

// profileEvent is one ProfileEvent sent to the host callback serving it.
type profileEvent struct {
	name, args string
	reply      chan *C.af_error_t
}

// record calls af_profile_event on the calling thread and replies with its
// error.
func (ev profileEvent) record() { ev.reply <- recordProfileEvent(ev.name, ev.args) }

// hostCalls maps the goroutine running a HostFunc (its id) to the channel
// of the callback that waits for it, while a profile may be recorded.
var hostCalls sync.Map // uint64 -> chan profileEvent

// hostProfiling is set once a run recording a profile is started through
// this package (RunOptions.cOptions): before that no marker can count, and
// host calls skip the goroutine's registration in hostCalls.
var hostProfiling atomic.Bool

func recordProfileEvent(name, argsJSON string) *C.af_error_t {
	np, nn := cstr(name)
	var ap *C.char // NULL, 0: no args
	var an C.size_t
	if argsJSON != "" {
		ap, an = cstr(argsJSON)
	}
	e := C.af_profile_event(np, nn, ap, an)
	runtime.KeepAlive(name)
	runtime.KeepAlive(argsJSON)
	return e
}

// goid is the calling goroutine's id, from the header of its stack trace
// ("goroutine 18 [running]:"). Ids are never reused.
func goid() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
