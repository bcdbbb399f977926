package af

import (
	"sync"
	"unicode/utf8"
)

// The Go errors that host functions and host providers return cross libaf
// as a code and a message only: libaf rebuilds the error chain on its side,
// so nothing of the Go value survives the trip. To give the caller back the
// callback's own error (errors.As finds its type, errors.Is its sentinels),
// the callback parks the error here under the (code, message) it sent, and
// the conversion of libaf's error claims it when a leaf with that code and
// message comes back. Entries are claimed first in, first out; a run that
// never reports an error it was sent (KeepGoing turns it into a value) leaves
// its entry behind, so the table keeps at most maxParkedGoErrors, dropping
// the oldest. Two callbacks failing at the same moment with the same code
// and text may each get the other's (equal-looking) error.

const maxParkedGoErrors = 256

type goErrKey struct {
	code Code
	msg  string
}

var parked struct {
	mu    sync.Mutex
	byKey map[goErrKey][]error
	order []goErrKey // insertion order, for dropping the oldest
}

// parkGoError remembers err, sent to libaf with code and msg.
func parkGoError(code Code, msg string, err error) {
	if !utf8.ValidString(msg) {
		return // libaf repairs the text, so the message would not match
	}
	k := goErrKey{code, msg}
	parked.mu.Lock()
	defer parked.mu.Unlock()
	if parked.byKey == nil {
		parked.byKey = map[goErrKey][]error{}
	}
	parked.byKey[k] = append(parked.byKey[k], err)
	parked.order = append(parked.order, k)
	if len(parked.order) > maxParkedGoErrors {
		old := parked.order[0]
		parked.order = parked.order[1:]
		popParked(old)
	}
}

// claimGoError takes the oldest error parked under (code, msg), or nil.
func claimGoError(code Code, msg string) error {
	k := goErrKey{code, msg}
	parked.mu.Lock()
	defer parked.mu.Unlock()
	err := popParked(k)
	if err != nil {
		for i, o := range parked.order {
			if o == k {
				parked.order = append(parked.order[:i], parked.order[i+1:]...)
				break
			}
		}
	}
	return err
}

func popParked(k goErrKey) error {
	errs := parked.byKey[k]
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		delete(parked.byKey, k)
	} else {
		parked.byKey[k] = errs[1:]
	}
	return errs[0]
}
