package pmi

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// The two wire formats a launcher speaks on the PMI descriptor.
//
// PMI-1 ("v1"): one command per line, "cmd=NAME key=value key=value\n",
// tokens separated by spaces; a value runs to the next space.
//
// PMI-2 ("v2"): one command per frame, a 6-byte decimal length padded with
// spaces, then that many bytes "cmd=NAME;key=value;key=value;", where a ';'
// inside a value is written twice (";;"). A PMI-2 session still opens with
// a PMI-1 line (cmd=init pmi_version=2 ...) and its PMI-1 answer.
//
// docs/pmi.md lists the commands this package sends and the answers it
// expects.

// maxLine bounds a PMI-1 line and maxFrame a PMI-2 frame's body, so that a
// launcher that sends garbage without end costs bounded memory. Launchers
// keep lines under 1 KiB (MPICH's PMIU_MAXLINE) and values under their
// vallen_max; a process mapping of many hosts makes the longest answers.
const (
	maxLine  = 64 << 10
	maxFrame = 64 << 10
)

// frameLenDigits is the width of a PMI-2 frame's length field.
const frameLenDigits = 6

// attr is one key=value pair of a message.
type attr struct{ key, value string }

// message is one command or answer: its cmd and the other pairs, in order.
type message struct {
	cmd   string
	attrs []attr
}

// get returns the value of key and whether the message has it.
func (m message) get(key string) (string, bool) {
	for _, a := range m.attrs {
		if a.key == key {
			return a.value, true
		}
	}
	return "", false
}

func (m message) String() string {
	var b bytes.Buffer
	b.WriteString("cmd=")
	b.WriteString(m.cmd)
	for _, a := range m.attrs {
		fmt.Fprintf(&b, " %s=%s", a.key, a.value)
	}
	return b.String()
}

// ErrProtocol is wrapped by every error about what the launcher sent: a
// line or frame that does not parse, an answer to another command, a
// missing or malformed field.
var ErrProtocol = errors.New("pmi: launcher broke the protocol")

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// printable reports whether b is a byte a key or value may hold on either
// wire: printable ASCII but space, '=' and ';'.
func printable(b byte) bool { return b > ' ' && b < 0x7f && b != '=' && b != ';' }

// checkToken reports why s cannot be a key or value on the wire, if it
// cannot: empty, or a byte outside printable.
func checkToken(what, s string) error {
	if s == "" {
		return fmt.Errorf("pmi: empty %s", what)
	}
	for i := 0; i < len(s); i++ {
		if !printable(s[i]) {
			return fmt.Errorf("pmi: %s %q: byte %#02x at %d (allowed: printable ASCII but space, '=' and ';')", what, s, s[i], i)
		}
	}
	return nil
}

// appendV1 appends m as a PMI-1 line. Its keys and values were checked by
// the caller (checkToken) or are the package's own.
func appendV1(dst []byte, m message) []byte {
	dst = append(dst, "cmd="...)
	dst = append(dst, m.cmd...)
	for _, a := range m.attrs {
		dst = append(dst, ' ')
		dst = append(dst, a.key...)
		dst = append(dst, '=')
		dst = append(dst, a.value...)
	}
	return append(dst, '\n')
}

// parseV1 parses one PMI-1 line, without its '\n'. The first token must be
// cmd=NAME; every token is key=value with a non-empty key; a key may appear
// once; every byte is printable ASCII (a '\r' before the end is allowed).
// Runs of spaces separate tokens.
func parseV1(line []byte) (message, error) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > maxLine {
		return message{}, protoErr("a PMI-1 line of %d bytes (at most %d)", len(line), maxLine)
	}
	var m message
	first := true
	for tok := range bytes.FieldsFuncSeq(line, func(r rune) bool { return r == ' ' }) {
		for i, c := range tok {
			if c < ' ' || c >= 0x7f {
				return message{}, protoErr("byte %#02x in the PMI-1 line %q (token %q, offset %d)", c, clip(line), clip(tok), i)
			}
		}
		k, v, ok := bytes.Cut(tok, []byte("="))
		if !ok || len(k) == 0 {
			return message{}, protoErr("token %q of the PMI-1 line %q is not key=value", clip(tok), clip(line))
		}
		if first {
			if string(k) != "cmd" || checkToken("cmd", string(v)) != nil {
				return message{}, protoErr("the PMI-1 line %q does not begin with cmd=NAME", clip(line))
			}
			m.cmd = string(v)
			first = false
			continue
		}
		if string(k) == "cmd" {
			return message{}, protoErr("two cmd in the PMI-1 line %q", clip(line))
		}
		if _, dup := m.get(string(k)); dup {
			return message{}, protoErr("key %q twice in the PMI-1 line %q", k, clip(line))
		}
		m.attrs = append(m.attrs, attr{string(k), string(v)})
	}
	if first {
		return message{}, protoErr("an empty PMI-1 line")
	}
	return m, nil
}

// appendV2 appends m as a PMI-2 frame: the length field, then
// "cmd=NAME;key=value;...", each ';' of a value doubled.
func appendV2(dst []byte, m message) []byte {
	start := len(dst)
	dst = append(dst, "      cmd="...)
	dst = append(dst, m.cmd...)
	dst = append(dst, ';')
	for _, a := range m.attrs {
		dst = append(dst, a.key...)
		dst = append(dst, '=')
		for i := 0; i < len(a.value); i++ {
			if a.value[i] == ';' {
				dst = append(dst, ';')
			}
			dst = append(dst, a.value[i])
		}
		dst = append(dst, ';')
	}
	n := len(dst) - start - frameLenDigits
	copy(dst[start:], fmt.Sprintf("%*d", frameLenDigits, n))
	return dst
}

// parseFrameLen parses a PMI-2 frame's length field: decimal digits with
// spaces before or after them (launchers pad either way).
func parseFrameLen(field []byte) (int, error) {
	digits := bytes.Trim(field, " ")
	if len(digits) == 0 {
		return 0, protoErr("a PMI-2 frame length of only spaces")
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, protoErr("the PMI-2 frame length %q is not a decimal number", field)
		}
		n = n*10 + int(c-'0')
	}
	if n == 0 {
		return 0, protoErr("an empty PMI-2 frame")
	}
	if n > maxFrame {
		return 0, protoErr("a PMI-2 frame of %d bytes (at most %d)", n, maxFrame)
	}
	return n, nil
}

// parseV2 parses a PMI-2 frame's body: pairs key=value each ended by ';'
// (the last ';' may be missing), ";;" in a value standing for one ';'.
// The first pair must be cmd=NAME; a key may appear once and holds no
// ';' or '='; every byte is printable ASCII or space.
func parseV2(body []byte) (message, error) {
	if len(body) > maxFrame {
		return message{}, protoErr("a PMI-2 frame of %d bytes (at most %d)", len(body), maxFrame)
	}
	var m message
	first := true
	rest := body
	for len(rest) > 0 {
		eq := bytes.IndexByte(rest, '=')
		if eq <= 0 || bytes.IndexByte(rest[:eq], ';') >= 0 {
			return message{}, protoErr("the PMI-2 frame %q has a pair that is not key=value;", clip(body))
		}
		key := string(rest[:eq])
		rest = rest[eq+1:]
		var val []byte
		for {
			i := bytes.IndexByte(rest, ';')
			if i < 0 {
				val, rest = append(val, rest...), nil
				break
			}
			val = append(val, rest[:i]...)
			if i+1 < len(rest) && rest[i+1] == ';' {
				val = append(val, ';')
				rest = rest[i+2:]
				continue
			}
			rest = rest[i+1:]
			break
		}
		for _, c := range []byte(key) {
			if c <= ' ' || c >= 0x7f {
				return message{}, protoErr("byte %#02x in a key of the PMI-2 frame %q", c, clip(body))
			}
		}
		for _, c := range val {
			if c < ' ' || c >= 0x7f {
				return message{}, protoErr("byte %#02x in a value of the PMI-2 frame %q", c, clip(body))
			}
		}
		if first {
			if key != "cmd" || checkToken("cmd", string(val)) != nil {
				return message{}, protoErr("the PMI-2 frame %q does not begin with cmd=NAME;", clip(body))
			}
			m.cmd = string(val)
			first = false
			continue
		}
		if key == "cmd" {
			return message{}, protoErr("two cmd in the PMI-2 frame %q", clip(body))
		}
		if _, dup := m.get(key); dup {
			return message{}, protoErr("key %q twice in the PMI-2 frame %q", key, clip(body))
		}
		m.attrs = append(m.attrs, attr{key, string(val)})
	}
	if first {
		return message{}, protoErr("an empty PMI-2 frame")
	}
	return m, nil
}

// clip shortens what an error quotes.
func clip(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "..."...)
	}
	return b
}

// Field readers for answers.

func (m message) int(key string) (int, error) {
	v, ok := m.get(key)
	if !ok {
		return 0, protoErr("%s without %s", m.cmd, key)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, protoErr("%s: %s=%q is not an integer", m.cmd, key, v)
	}
	return n, nil
}

// rc checks an answer's return code: absent or 0 is success; otherwise
// an *Error with the launcher's msg (or errmsg).
func (m message) rc(op string) error {
	v, ok := m.get("rc")
	if !ok || v == "0" {
		return nil
	}
	code, err := strconv.Atoi(v)
	if err != nil {
		return protoErr("%s: rc=%q is not an integer", m.cmd, v)
	}
	msg, _ := m.get("msg")
	if msg == "" {
		msg, _ = m.get("errmsg")
	}
	return &Error{Op: op, Code: code, Msg: msg}
}
