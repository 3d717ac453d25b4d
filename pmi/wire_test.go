package pmi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParseV1(t *testing.T) {
	good := []struct {
		line string
		want message
	}{
		{"cmd=barrier_out", message{"barrier_out", nil}},
		{"cmd=get_result rc=0 msg=success value=v0", message{"get_result", []attr{{"rc", "0"}, {"msg", "success"}, {"value", "v0"}}}},
		{"cmd=maxes  kvsname_max=256 keylen_max=64 vallen_max=1024 \r", message{"maxes", []attr{{"kvsname_max", "256"}, {"keylen_max", "64"}, {"vallen_max", "1024"}}}},
		{"cmd=x a= b=c=d", message{"x", []attr{{"a", ""}, {"b", "c=d"}}}},
	}
	for _, g := range good {
		got, err := parseV1([]byte(g.line))
		if err != nil || !reflect.DeepEqual(got, g.want) {
			t.Errorf("parseV1(%q) = %#v, %v; want %#v", g.line, got, err, g.want)
		}
	}
	bad := []string{"", "   ", "rc=0 cmd=x", "cmd= rc=0", "cmd=x rc", "cmd=x =1", "cmd=x rc=0 rc=1", "cmd=x cmd=y", "cmd=x v=\x01", "cmd=x\tv=1", "cmd=x v=\xff",
		"cmd=x v=" + strings.Repeat("a", maxLine)}
	for _, b := range bad {
		if m, err := parseV1([]byte(b)); !errors.Is(err, ErrProtocol) {
			t.Errorf("parseV1(%q) = %v, %v; want ErrProtocol", b, m, err)
		}
	}
}

func TestAppendV1(t *testing.T) {
	got := string(appendV1(nil, message{"put", []attr{{"kvsname", "kvs_1"}, {"key", "k"}, {"value", "v"}}}))
	if want := "cmd=put kvsname=kvs_1 key=k value=v\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestAppendV2(t *testing.T) {
	got := string(appendV2(nil, message{"kvs-put", []attr{{"key", "k"}, {"value", "a;b"}}}))
	if want := "    29cmd=kvs-put;key=k;value=a;;b;"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := string(appendV2(nil, message{"kvs-fence", nil})); got != "    14cmd=kvs-fence;" {
		t.Fatalf("got %q", got)
	}
}

func TestParseV2(t *testing.T) {
	good := []struct {
		body string
		want message
	}{
		{"cmd=kvs-fence-response;rc=0;", message{"kvs-fence-response", []attr{{"rc", "0"}}}},
		{"cmd=kvs-get-response;found=TRUE;value=a;;b=c;rc=0", message{"kvs-get-response", []attr{{"found", "TRUE"}, {"value", "a;b=c"}, {"rc", "0"}}}},
		{"cmd=info-getjobattr-response;found=TRUE;value=(vector,(0,2,1));rc=0;", message{"info-getjobattr-response", []attr{{"found", "TRUE"}, {"value", "(vector,(0,2,1))"}, {"rc", "0"}}}},
		{"cmd=x;v=;w=a b;", message{"x", []attr{{"v", ""}, {"w", "a b"}}}},
		{"cmd=x;v=;;;", message{"x", []attr{{"v", ";"}}}},
	}
	for _, g := range good {
		got, err := parseV2([]byte(g.body))
		if err != nil || !reflect.DeepEqual(got, g.want) {
			t.Errorf("parseV2(%q) = %#v, %v; want %#v", g.body, got, err, g.want)
		}
	}
	bad := []string{"", ";", "rc=0;cmd=x;", "cmd=;", "cmd=x;rc;", "cmd=x;=1;", "cmd=x;a;b=1;", "cmd=x;k=1;k=2;", "cmd=x;cmd=y;", "cmd=x;v=\n;", "cmd=x;k\x01=1;", "cmd=x;k y=1;"}
	for _, b := range bad {
		if m, err := parseV2([]byte(b)); !errors.Is(err, ErrProtocol) {
			t.Errorf("parseV2(%q) = %v, %v; want ErrProtocol", b, m, err)
		}
	}
}

func TestParseFrameLen(t *testing.T) {
	for field, want := range map[string]int{"    14": 14, "14    ": 14, "000014": 14, " 65536": 65536} {
		if n, err := parseFrameLen([]byte(field)); err != nil || n != want {
			t.Errorf("parseFrameLen(%q) = %d, %v; want %d", field, n, err, want)
		}
	}
	for _, field := range []string{"      ", "     0", "  1 4 ", "-00014", "0x0014", " 65537", "999999"} {
		if n, err := parseFrameLen([]byte(field)); !errors.Is(err, ErrProtocol) {
			t.Errorf("parseFrameLen(%q) = %d, %v; want ErrProtocol", field, n, err)
		}
	}
}

// TestRoundTrip: what the package writes, it reads back as the same message.
func TestRoundTrip(t *testing.T) {
	msgs := []message{
		{"put", []attr{{"kvsname", "kvs_7_0"}, {"key", "card-3"}, {"value", "h:1|tcp:192.0.2.4:5000"}}},
		{"kvs-get", []attr{{"jobid", "j"}, {"srcid", "-1"}, {"key", "k"}}},
		{"finalize", nil},
	}
	for _, m := range msgs {
		for _, v2 := range []bool{false, true} {
			var b []byte
			if v2 {
				b = appendV2(nil, m)
			} else {
				b = appendV1(nil, m)
			}
			got, err := readMsg(bufio.NewReader(bytes.NewReader(b)), v2)
			if err != nil || !reflect.DeepEqual(got, m) {
				t.Errorf("v2=%v: %q read back as %#v, %v", v2, b, got, err)
			}
		}
	}
}

// TestReadMsgTruncated: a message cut short is an unexpected EOF, a long
// line a protocol error, never a hang or an unbounded read.
func TestReadMsgTruncated(t *testing.T) {
	for _, c := range []struct {
		in   string
		v2   bool
		want error
	}{
		{"cmd=barrier_out", false, io.ErrUnexpectedEOF},
		{"", false, io.EOF},
		{"    14cmd=kvs", true, io.ErrUnexpectedEOF},
		{"   ", true, io.ErrUnexpectedEOF},
		{strings.Repeat("x", maxLine+10) + "\n", false, ErrProtocol},
		{"999999" + strings.Repeat("x", 100), true, ErrProtocol},
	} {
		_, err := readMsg(bufio.NewReader(strings.NewReader(c.in)), c.v2)
		if !errors.Is(err, c.want) {
			t.Errorf("readMsg(%.20q, v2=%v) = %v, want %v", c.in, c.v2, err, c.want)
		}
	}
}

func TestCheckToken(t *testing.T) {
	if err := checkToken("key", "card-0.tcp_1/x:y|z"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", "a b", "a=b", "a;b", "a\nb", "é"} {
		if checkToken("value", s) == nil {
			t.Errorf("checkToken(%q) accepted", s)
		}
	}
}

// FuzzParseV1: any line parses to an error or to a message that writes
// back to a line parsing to the same message.
func FuzzParseV1(f *testing.F) {
	for _, s := range []string{"cmd=barrier_out", "cmd=get_result rc=0 msg=success value=v0", "cmd=x a= b=c=d", "cmd=set size=4", "rc=0 cmd=x", "cmd=x\tv"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseV1(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		if m.cmd == "" {
			t.Fatalf("%q parsed without cmd", line)
		}
		out := appendV1(nil, m)
		again, err := parseV1(out[:len(out)-1])
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("%q -> %#v -> %q -> %#v, %v", line, m, out, again, err)
		}
	})
}

// FuzzParseV2: any frame body parses to an error or to a message that
// writes back to a frame reading back as the same message.
func FuzzParseV2(f *testing.F) {
	for _, s := range []string{"cmd=kvs-fence-response;rc=0;", "cmd=kvs-get-response;found=TRUE;value=a;;b=c;rc=0", "cmd=x;v=;;;", "cmd=x;a;b=1;", "cmd=x;v=\n;"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseV2(body)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		out := appendV2(nil, m)
		again, err := readMsg(bufio.NewReader(bytes.NewReader(out)), true)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("%q -> %#v -> %q -> %#v, %v", body, m, out, again, err)
		}
	})
}

// FuzzReadMsg: any byte stream gives messages or an error, in either
// framing, and reading stops.
func FuzzReadMsg(f *testing.F) {
	f.Add([]byte("cmd=initack rc=0\ncmd=set size=2\n"), false)
	f.Add([]byte("    14cmd=kvs-fence;    29cmd=kvs-put;key=k;value=a;;b;"), true)
	f.Add([]byte("999999"), true)
	f.Fuzz(func(t *testing.T, in []byte, v2 bool) {
		br := bufio.NewReader(bytes.NewReader(in))
		for range len(in) + 1 {
			if _, err := readMsg(br, v2); err != nil {
				return
			}
		}
		t.Fatalf("%d messages from %d bytes", len(in)+1, len(in))
	})
}
