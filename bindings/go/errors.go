package af

/*
#include "af/af.h"
*/
import "C"

import (
	"context"
	"strings"
)

// Code is a libaf error code (AF_ERR_* in af.h). Codes, not message texts,
// are the contract: compare Code() against the Code* constants, or use
// errors.Is with the Err* sentinels.
type Code int32

// Error codes.
const (
	CodeInvalidArgument Code = C.AF_ERR_INVALID_ARGUMENT // bad input, structure, kind, template
	CodeNotFound        Code = C.AF_ERR_NOT_FOUND        // switch key, host function, provider, route
	CodeSchema          Code = C.AF_ERR_SCHEMA           // structured output did not validate
	CodeFormat          Code = C.AF_ERR_FORMAT           // corrupt or unverifiable graph bytes
	CodeVersion         Code = C.AF_ERR_VERSION          // graph needs a newer library
	CodeProvider        Code = C.AF_ERR_PROVIDER         // LM or host call failed after retries
	CodeTimeout         Code = C.AF_ERR_TIMEOUT
	CodeCancelled       Code = C.AF_ERR_CANCELLED
	CodeCallback        Code = C.AF_ERR_CALLBACK // a host callback returned an error (see cause)
	CodeIO              Code = C.AF_ERR_IO
	CodeOutOfMemory     Code = C.AF_ERR_OUT_OF_MEMORY
	CodeInternal        Code = C.AF_ERR_INTERNAL
)

var codeNames = map[Code]string{
	CodeInvalidArgument: "invalid argument",
	CodeNotFound:        "not found",
	CodeSchema:          "schema",
	CodeFormat:          "format",
	CodeVersion:         "version",
	CodeProvider:        "provider",
	CodeTimeout:         "timeout",
	CodeCancelled:       "cancelled",
	CodeCallback:        "callback",
	CodeIO:              "io",
	CodeOutOfMemory:     "out of memory",
	CodeInternal:        "internal",
}

// String is a short lower-case name of the code ("invalid argument").
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "code " + itoa(int(c))
}

// Name is the code's name as libaf spells it ("NOT_FOUND"; "UNKNOWN" for a
// code libaf does not define): the name error values carry
// ({"error": {"name"}}) and the database hosts print.
func (c Code) Name() string { return C.GoString(C.af_error_code_name(C.int32_t(c))) }

// CodeName is code.String(), kept for callers written before Code had a
// String method.
func CodeName(code Code) string { return code.String() }

// Sentinel errors, one per code, for errors.Is: errors.Is(err,
// af.ErrNotFound) is true when any link of err's chain has CodeNotFound.
// They are only compared against, never returned.
var (
	ErrInvalidArgument = sentinel(CodeInvalidArgument)
	ErrNotFound        = sentinel(CodeNotFound)
	ErrSchema          = sentinel(CodeSchema)
	ErrFormat          = sentinel(CodeFormat)
	ErrVersion         = sentinel(CodeVersion)
	ErrProvider        = sentinel(CodeProvider)
	ErrTimeout         = sentinel(CodeTimeout)
	ErrCancelled       = sentinel(CodeCancelled)
	ErrCallback        = sentinel(CodeCallback)
	ErrIO              = sentinel(CodeIO)
	ErrOutOfMemory     = sentinel(CodeOutOfMemory)
	ErrInternal        = sentinel(CodeInternal)
)

func sentinel(c Code) *Error { return &Error{Message: c.String(), code: c, sentinel: true} }

// Error is a libaf error: a code, a message and an optional cause.
//
// Errors returned by libaf are *Error values; use errors.As to get one and
// Code to branch on it. Unwrap returns the cause: the next *Error of the
// chain or, for the error a Go callback returned (trace function, host
// function, host provider), that original Go error value (so errors.Is and
// errors.As find the caller's own errors). An *Error a callback returned
// comes back as that very value.
type Error struct {
	// Message is libaf's message for this link of the chain. libaf's
	// messages usually repeat their cause's message; Error() shows a
	// cause's message only when this one does not already contain it.
	Message string
	code    Code
	cause   error
	// sentinel marks the Err* values: errors.Is matches them by code.
	sentinel bool
	// fromLib is true for errors made by libaf (as opposed to NewError):
	// a trace function that returns one fails the trace with that very
	// error, as af_trace does with an error an operation returned.
	fromLib bool
}

// NewError makes an *Error with the given code, for a trace function that
// wants to report its own failure with a specific code (Trace then returns
// a CodeCallback error whose cause is this error).
func NewError(code Code, message string) *Error {
	return &Error{Message: message, code: code}
}

// Code is the AF_ERR_* code of this error (one of the Code* constants).
func (e *Error) Code() Code { return e.code }

// Is makes errors.Is match by code: the Err* sentinel of e's code, and for
// CodeTimeout and CodeCancelled also context.DeadlineExceeded and
// context.Canceled, so code written against the context package's errors
// works on libaf's.
func (e *Error) Is(target error) bool {
	switch target {
	case context.DeadlineExceeded:
		return e.code == CodeTimeout
	case context.Canceled:
		return e.code == CodeCancelled
	}
	t, ok := target.(*Error)
	return ok && t.sentinel && t.code == e.code
}

// Unwrap returns the cause of e, or nil.
func (e *Error) Unwrap() error {
	if e.cause == nil {
		return nil
	}
	return e.cause
}

// Error is "af: <code name>: <message>", followed by "; caused by: <code
// name>: <message>" for each *Error cause whose message is not already
// part of the text.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("af: ")
	b.WriteString(e.code.String())
	b.WriteString(": ")
	b.WriteString(e.Message)
	for cur := e; ; {
		next, ok := cur.cause.(*Error)
		if !ok || next == nil {
			// A non-*Error cause is the original Go error of a callback,
			// whose text is already cur.Message (see newCError).
			break
		}
		if !strings.Contains(b.String(), next.Message) {
			b.WriteString("; caused by: ")
			b.WriteString(next.code.String())
			b.WriteString(": ")
			b.WriteString(next.Message)
		}
		cur = next
	}
	return b.String()
}

// takeError converts an owned af_error_t* (and its causes) and frees it.
// Returns an untyped nil for NULL.
func takeError(e *C.af_error_t) error {
	if e == nil {
		return nil
	}
	err := convertError(e)
	C.af_error_free(e)
	return err
}

func convertError(e *C.af_error_t) *Error {
	raw := C.GoString(C.af_error_message(e))
	out := &Error{
		Message: bindingNames.Replace(raw),
		code:    Code(C.af_error_code(e)),
		fromLib: true,
	}
	if orig := payloadError(e); orig != nil {
		// The node a Go callback sent (see goerrors.go): hand back the
		// callback's own error, which holds its whole chain.
		if ae, ok := orig.(*Error); ok {
			return ae
		}
		out.cause = orig
		return out
	}
	if c := C.af_error_cause(e); c != nil {
		out.cause = convertError(c)
	}
	return out
}

// bindingNames rewrites the C function names libaf's hints mention into
// this package's methods, so a message says what a Go caller should call.
var bindingNames = strings.NewReplacer(
	"af_register_function_with", "(*Engine).RegisterFunctionWith",
	"af_register_function_blocking", "(*Engine).RegisterFunctionBlocking",
	"af_register_function_async", "(*Engine).RegisterFunctionAsync",
	"af_register_function", "(*Engine).RegisterFunction",
	"af_context_route", "(*Engine).Route",
	"af_ir_related_json_with", "(*IR).RelatedJSONWith",
	"af_ir_related_json", "(*IR).RelatedJSON",
	"af_journal_summary_json", "JournalSummaryJSON",
	"af_journal_compact", "JournalCompact",
)

// errClosed is the error of a call on a closed (or invalidated) handle.
func errClosed(what string) error {
	return &Error{Message: what + " is closed (or was a borrowed trace input used after the trace function returned)", code: CodeInvalidArgument}
}
