package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadEnvTrimsSurroundingWhitespace(t *testing.T) {
	t.Setenv("AICR_TEST_SECRET", "  s3cret \n")
	v, err := Ref{Env: "AICR_TEST_SECRET"}.Read()
	if err != nil {
		t.Fatal(err)
	}
	if v.Reveal() != "s3cret" {
		t.Fatalf("Reveal = %q, want surrounding whitespace trimmed", v.Reveal())
	}
}

func TestReadErrorsNameTheSourceAndWhatToDo(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AICR_TEST_BLANK", " ")
	cases := []struct {
		name string
		ref  Ref
		is   error
		want string
	}{
		{"unset env", Ref{Env: "AICR_TEST_SURELY_UNSET"}, ErrUnset,
			"environment variable AICR_TEST_SURELY_UNSET: environment variable is unset or empty (export AICR_TEST_SURELY_UNSET in the environment of the process that needs it)"},
		{"blank env", Ref{Env: "AICR_TEST_BLANK"}, ErrUnset, "environment variable AICR_TEST_BLANK"},
		{"missing file", Ref{File: filepath.Join(dir, "nope")}, fs.ErrNotExist,
			"file " + filepath.Join(dir, "nope") + ": no such file or directory (create the file or fix the path)"},
		{"empty file", Ref{File: empty}, ErrEmpty, "file " + empty + ": secret file is empty (write the secret into it)"},
		{"nothing", Ref{}, ErrNotConfigured, "no secret configured"},
		{"both", Ref{Env: "X", File: "y"}, ErrBoth, "both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.ref.Read()
			if !errors.Is(err, c.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, c.is)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestReadFileRelativeToConfigDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte("abc\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := Ref{File: "key"}.InDir(dir).Read()
	if err != nil || v.Reveal() != "abc" {
		t.Fatalf("Read = %q, %v", v.Reveal(), err)
	}
	if got := (Ref{File: "/abs"}).InDir(dir).File; got != "/abs" {
		t.Fatalf("absolute path changed to %q", got)
	}
}

func TestValidateNamesKeys(t *testing.T) {
	err := Ref{Env: "A", File: "b"}.Validate("webhook_url", true)
	if err == nil || !strings.Contains(err.Error(), "webhook_url_env and webhook_url_file") || !errors.Is(err, ErrBoth) {
		t.Fatalf("both: %v", err)
	}
	err = Ref{}.Validate("secret", true)
	if err == nil || !strings.Contains(err.Error(), "secret_env or secret_file") {
		t.Fatalf("required: %v", err)
	}
	if err := (Ref{}).Validate("secret", false); err != nil {
		t.Fatalf("optional: %v", err)
	}
}

func TestValueNeverPrints(t *testing.T) {
	v := New("hunter2-very-secret")
	type wrapper struct {
		Token Value `json:"token"`
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "token", v)
	raw, _ := json.Marshal(wrapper{v})
	var decoded map[string]string
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	txt, _ := v.MarshalText()
	outs := []string{
		fmt.Sprint(v), fmt.Sprintf("%v %+v %#v %s %q %x", v, v, v, v, v, v),
		fmt.Sprintf("%+v", wrapper{v}), fmt.Sprintf("%#v", wrapper{v}),
		decoded["token"], string(txt), logs.String(),
	}
	for _, o := range outs {
		if strings.Contains(o, "hunter2") {
			t.Fatalf("secret leaked: %s", o)
		}
		if !strings.Contains(o, Redacted) {
			t.Fatalf("no %s in %s", Redacted, o)
		}
	}
	if v.Reveal() != "hunter2-very-secret" {
		t.Fatal("Reveal lost the value")
	}
}

func TestScrubReplacesEveryValueWithOnePlaceholder(t *testing.T) {
	key := "sk-live-abc123"
	text := "401 from https://h/v1?k=" + key + ": key " + key + " refused; tok abc; long " + key + "-suffix"
	got := Scrub(text, "abc", key+"-suffix", key, "")
	if strings.Contains(got, key) {
		t.Fatalf("key left in %q", got)
	}
	// The longer value goes first: no "-suffix" tail of a half-replaced one.
	want := "401 from https://h/v1?k=<secret>: key <secret> refused; tok abc; long <secret>"
	if got != want {
		t.Fatalf("Scrub:\n got %q\nwant %q", got, want)
	}
	if got := New(key).Scrub("echo " + key); got != "echo <secret>" {
		t.Fatalf("Value.Scrub: %q", got)
	}
	if got := (Value{}).Scrub("nothing to hide"); got != "nothing to hide" {
		t.Fatalf("zero Value.Scrub: %q", got)
	}
}

// readWithin runs Read on a goroutine so that a read which blocks (the bug
// this guards against) fails the test instead of hanging it.
func readWithin(t *testing.T, ref Ref) (Value, error) {
	t.Helper()
	type result struct {
		v   Value
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := ref.Read()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("Read(%s) still blocked after 5s", ref.File)
		return Value{}, nil
	}
}

func TestReadFileRefusesWhatIsNotASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: a huge file that costs no disk.
	if err := f.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cases := []struct {
		name, path string
		is         error
		want       string
	}{
		{"fifo", fifo, ErrNotRegular, "file " + fifo + ": not a regular file (it is a named pipe (FIFO)) (point the setting at a regular file"},
		{"dev zero", "/dev/zero", ErrNotRegular, "file /dev/zero: not a regular file (it is a character device)"},
		{"directory", dir, ErrNotRegular, "(it is a directory)"},
		{"too large", big, ErrTooLarge, "file " + big + ": file is too large: more than 65536 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readWithin(t, Ref{File: c.path})
			if !errors.Is(err, c.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, c.is)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %q, want it to contain %q", err, c.want)
			}
		})
	}
}

// Kubernetes secret volumes and /run/secrets present files through links;
// the daemon's own secret files may be one.
func TestReadFileFollowsALinkToARegularFile(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "..data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "key"), []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "key")
	if err := os.Symlink(filepath.Join("..data", "key"), link); err != nil {
		t.Fatal(err)
	}
	v, err := readWithin(t, Ref{File: link})
	if err != nil {
		t.Fatal(err)
	}
	if v.Reveal() != "s3cret-value" {
		t.Fatalf("Reveal = %q", v.Reveal())
	}
	// A link to a FIFO is refused like the FIFO itself.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	toFifo := filepath.Join(dir, "to-fifo")
	if err := os.Symlink(fifo, toFifo); err != nil {
		t.Fatal(err)
	}
	if _, err := readWithin(t, Ref{File: toFifo}); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("err = %v, want ErrNotRegular", err)
	}
}
