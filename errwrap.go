package rdmacm

import "strings"

// The package prefixes of this module's errors; an error that crosses
// into this package keeps its chain but not their text, so a message has
// one prefix.
var pkgPrefixes = []string{"rdmacm: ", "cm: ", "uverbs: ", "umad: ", "engine: ", "abi: ", "rdma: ", "ece: "}

// stripPrefixes removes the package prefixes at the start of msg and after
// each ": ".
func stripPrefixes(msg string) string {
	for changed := true; changed; {
		changed = false
		for _, p := range pkgPrefixes {
			if strings.HasPrefix(msg, p) {
				msg, changed = msg[len(p):], true
			}
			if i := strings.Index(msg, ": "+p); i >= 0 {
				msg, changed = msg[:i+2]+msg[i+2+len(p):], true
			}
		}
	}
	return msg
}

// opError is an error of this package with one prefix, that names what
// failed and keeps the inner error's chain (errors.Is, errors.As, the
// errno).
type opError struct {
	msg string
	err error
}

func (e *opError) Error() string { return e.msg }
func (e *opError) Unwrap() error { return e.err }

// wrapErr is "rdmacm: what: err" with err's own prefixes removed.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{msg: "rdmacm: " + what + ": " + stripPrefixes(err.Error()), err: err}
}
