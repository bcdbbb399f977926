package af

import (
	"sync/atomic"
	"unsafe"
)

// cPtr is the C pointer of a handle (P is *C.af_X_t), guarded so that a
// method racing Close on the same handle never touches freed memory.
//
// A method holds the handle open for the whole of its C call: Acquire
// (which fails once the handle is closed) ... Release. Close marks the
// handle closed at once, so every later Acquire fails with the closed-handle
// error, and the C object is freed exactly once, when no use is in
// progress any more:
//
//   - by Close itself when no use is in progress, or
//   - by the last Release otherwise: the last releaser frees it.
//
// Close never waits for the uses in progress. That is what makes a Close
// called from inside a callback that runs during a use of the same handle
// (a trace function closing its Engine, a host function closing a Value
// the outer call holds) safe: waiting there would wait for the very call
// the callback runs in, a deadlock. With the last releaser freeing, that
// Close returns at once and the outer call frees the object when it ends.
// Nothing here blocks, so there is nothing to deadlock on. (A free that a
// Release runs may itself wait for libaf's threads: af_context_free joins
// them. The Engine's late free therefore runs on a goroutine of its own;
// see freeEngineLater.)
//
// A finalizer may call Close: it runs only once no goroutine can use the
// handle (each use keeps the handle reachable until its Release), so it
// finds no use in progress and frees directly.
//
// A value libaf lends a callback is a handle like any other: it holds a
// reference of its own, closed when the callback returns (see borrowValue).
//
// The state is one atomic word: the open flag and the number of uses in
// progress. The object is freed by whoever moves the word to exactly zero
// (not open, no use), which happens once: a closed handle never opens
// again and its count only goes down. (libaf's handle types are incomplete
// C structs, which Go does not accept as the type argument of
// atomic.Pointer; hence the pointer type as parameter and an
// unsafe.Pointer field.)
type cPtr[P any] struct {
	p     unsafe.Pointer // set by init before the handle is shared; never changed
	state atomic.Uint64  // cPtrOpen | uses in progress
}

const (
	cPtrOpen uint64 = 1 << 63      // set by init, cleared by Close
	cPtrUses        = cPtrOpen - 1 // the uses in progress
)

func (c *cPtr[P]) cast(raw unsafe.Pointer) P { return *(*P)(unsafe.Pointer(&raw)) }

// init sets the pointer of a new handle and opens it (before the handle
// is shared). A zero cPtr, never initialized, behaves as closed.
func (c *cPtr[P]) init(p P) {
	atomic.StorePointer(&c.p, *(*unsafe.Pointer)(unsafe.Pointer(&p)))
	c.state.Store(cPtrOpen)
}

// Acquire starts a use: the pointer, valid until the matching Release, and
// true; or false once the handle is closed (then there is nothing to
// release).
func (c *cPtr[P]) Acquire() (P, bool) {
	for {
		s := c.state.Load()
		if s&cPtrOpen == 0 {
			var zero P
			return zero, false
		}
		if c.state.CompareAndSwap(s, s+1) {
			return c.cast(atomic.LoadPointer(&c.p)), true
		}
	}
}

// Release ends a use begun by a successful Acquire. The last use of a
// handle closed meanwhile frees the object with free.
func (c *cPtr[P]) Release(free func(P)) {
	if c.state.Add(^uint64(0)) == 0 { // closed, and this was the last use
		free(c.cast(atomic.LoadPointer(&c.p)))
	}
}

// Close closes the handle: later Acquires fail. The object is freed with
// free now if no use is in progress, else by the last Release. Reports
// whether this call closed it (true for exactly one caller, however many
// goroutines close at once; false on a zero cPtr too).
func (c *cPtr[P]) Close(free func(P)) bool {
	for {
		s := c.state.Load()
		if s&cPtrOpen == 0 {
			return false
		}
		if c.state.CompareAndSwap(s, s&^cPtrOpen) {
			if s&cPtrUses == 0 {
				free(c.cast(atomic.LoadPointer(&c.p)))
			}
			return true
		}
	}
}
