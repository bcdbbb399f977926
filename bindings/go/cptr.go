package af

import (
	"sync/atomic"
	"unsafe"
)

// cPtr is the C pointer of a handle (P is *C.af_X_t), read and cleared
// atomically: Close swaps it to nil, so the pointer is freed exactly once
// however many goroutines call Close at the same time. (libaf's handle
// types are incomplete C structs, which Go does not accept as the type
// argument of atomic.Pointer; hence the pointer type as parameter.)
type cPtr[P any] struct{ p unsafe.Pointer }

func (c *cPtr[P]) cast(raw unsafe.Pointer) P { return *(*P)(unsafe.Pointer(&raw)) }

// Store sets the pointer (when the handle is made).
func (c *cPtr[P]) Store(p P) { atomic.StorePointer(&c.p, *(*unsafe.Pointer)(unsafe.Pointer(&p))) }

// Get is the pointer and whether the handle is still open.
func (c *cPtr[P]) Get() (P, bool) {
	raw := atomic.LoadPointer(&c.p)
	return c.cast(raw), raw != nil
}

// Closed reports whether the pointer was taken (or never set).
func (c *cPtr[P]) Closed() bool { return atomic.LoadPointer(&c.p) == nil }

// Take clears the pointer and returns it; ok is false for exactly every
// caller but the first.
func (c *cPtr[P]) Take() (P, bool) {
	raw := atomic.SwapPointer(&c.p, nil)
	return c.cast(raw), raw != nil
}
