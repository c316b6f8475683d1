package svn

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// This file reads Subversion's dump stream (subversion/notes/
// dump-load-format.txt), the one-process way to learn every changed
// file's properties, size and content: `svnadmin dump -r N --incremental`
// prints one node record per changed path, each with its headers, its
// properties and its full text. The stream is read once, in order, and
// never held: a text goes straight from the pipe to its destination.

// dumpNode is the part of one node record the adapter uses.
type dumpNode struct {
	path     string // repository path without the leading "/"
	kind     string // "file", "dir", or "" (deletes do not say)
	action   string // add, change, delete, replace
	copyFrom string
	// props holds the wanted properties of a record that carries a
	// property block; propsKnown is false when it carries none (the
	// properties did not change). With propDelta the block lists only
	// changes, so a missing key says nothing.
	props      map[string]string
	propsKnown bool
	propDelta  bool
	// hasText is set when the record carries a text; textDelta when that
	// text is an svndiff against an earlier version, not the file itself.
	hasText   bool
	textDelta bool
	textLen   int64
	textMD5   string // of the full text, hex
}

// dumpProps are the properties worth keeping from a dump; the others
// (svn:mergeinfo can run to megabytes) are skipped unread.
var dumpProps = map[string]bool{"svn:mime-type": true, "svn:author": true, "svn:date": true, "svn:log": true, "svn:special": true}

// maxDumpProp bounds one kept property value, so a corrupt length cannot
// make the reader allocate without limit.
const maxDumpProp = 16 << 20

// maxDumpHeader bounds one header line.
const maxDumpHeader = 64 << 10

var errDumpFormat = errors.New("malformed svn dump stream")

// readDump reads a dump stream from r. rev receives each revision record's
// properties; node receives each node record and, when it has one, a
// reader over its text, which node may read partly or not at all.
func readDump(r io.Reader, rev func(props map[string]string) error, node func(n *dumpNode, text io.Reader) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		h, err := readDumpHeaders(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		propLen, err := h.length("Prop-content-length")
		if err != nil {
			return err
		}
		textLen, err := h.length("Text-content-length")
		if err != nil {
			return err
		}
		total, err := h.length("Content-length")
		if err != nil {
			return err
		}
		if total < 0 {
			total = max(propLen, 0) + max(textLen, 0)
		}
		if max(propLen, 0)+max(textLen, 0) > total {
			return fmt.Errorf("%w: content lengths disagree in record %q", errDumpFormat, h.first)
		}
		body := &io.LimitedReader{R: br, N: total}
		var props map[string]string
		if propLen >= 0 {
			if props, err = readDumpProps(io.LimitReader(body, propLen)); err != nil {
				return err
			}
		}
		switch {
		case h.has("Revision-number"):
			if rev != nil {
				if err := rev(props); err != nil {
					return err
				}
			}
		case h.has("Node-path"):
			n := &dumpNode{
				path:       h.get("Node-path"),
				kind:       h.get("Node-kind"),
				action:     h.get("Node-action"),
				copyFrom:   h.get("Node-copyfrom-path"),
				props:      props,
				propsKnown: propLen >= 0,
				propDelta:  h.get("Prop-delta") == "true",
				hasText:    textLen >= 0,
				textDelta:  h.get("Text-delta") == "true",
				textLen:    textLen,
				textMD5:    h.get("Text-content-md5"),
			}
			var text io.Reader
			if n.hasText {
				text = io.LimitReader(body, textLen)
			}
			if err := node(n, text); err != nil {
				return err
			}
		}
		// Whatever the callback left unread, and any content past the
		// declared parts.
		if _, err := io.Copy(io.Discard, body); err != nil {
			return fmt.Errorf("read svn dump: %w", err)
		}
		if body.N > 0 {
			return fmt.Errorf("%w: stream ends %d bytes into the content of record %q", errDumpFormat, total-body.N, h.first)
		}
	}
}

type dumpHeaders struct {
	first string
	kv    map[string]string
}

func (h dumpHeaders) has(k string) bool   { _, ok := h.kv[k]; return ok }
func (h dumpHeaders) get(k string) string { return h.kv[k] }
func (h dumpHeaders) length(k string) (int64, error) {
	v, ok := h.kv[k]
	if !ok {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s %q", errDumpFormat, k, v)
	}
	return n, nil
}

// readDumpHeaders reads one header block, skipping the blank lines
// between records; io.EOF means the stream ended cleanly.
func readDumpHeaders(br *bufio.Reader) (dumpHeaders, error) {
	h := dumpHeaders{kv: map[string]string{}}
	for {
		line, err := readDumpLine(br)
		if errors.Is(err, io.EOF) && len(h.kv) == 0 && line == "" {
			return h, io.EOF
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return h, err
		}
		if line == "" {
			if len(h.kv) > 0 {
				return h, nil
			}
			if errors.Is(err, io.EOF) {
				return h, io.EOF
			}
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			return h, fmt.Errorf("%w: header line %q", errDumpFormat, line)
		}
		if len(h.kv) == 0 {
			h.first = line
		}
		h.kv[k] = v
		if errors.Is(err, io.EOF) {
			return h, fmt.Errorf("%w: stream ends inside record %q", errDumpFormat, h.first)
		}
	}
}

func readDumpLine(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxDumpHeader {
			return "", fmt.Errorf("%w: header line over %d bytes", errDumpFormat, maxDumpHeader)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return string(buf), io.EOF
		case err != nil:
			return "", fmt.Errorf("read svn dump: %w", err)
		}
		return string(bytes.TrimSuffix(buf, []byte{'\n'})), nil
	}
}

// readDumpProps reads a property block: "K n", key, "V n", value, ...,
// "PROPS-END"; "D n", key marks a deleted property in a delta block.
func readDumpProps(r io.Reader) (map[string]string, error) {
	br := bufio.NewReader(r)
	props := map[string]string{}
	readN := func(tag string) (int64, bool, error) {
		line, err := readDumpLine(br)
		if err != nil {
			return 0, false, fmt.Errorf("%w: property block ends early", errDumpFormat)
		}
		if line == "PROPS-END" {
			return 0, false, nil
		}
		t, n, ok := strings.Cut(line, " ")
		if !ok || !strings.Contains(tag, t) {
			return 0, false, fmt.Errorf("%w: property line %q", errDumpFormat, line)
		}
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 0 {
			return 0, false, fmt.Errorf("%w: property line %q", errDumpFormat, line)
		}
		if t == "D" {
			v = -1 - v
		}
		return v, true, nil
	}
	// readBlob returns n bytes and the newline after them; it keeps them
	// only when keep says so.
	readBlob := func(n int64, keep bool) (string, error) {
		var b strings.Builder
		var w io.Writer = io.Discard
		if keep {
			if n > maxDumpProp {
				return "", fmt.Errorf("%w: property of %d bytes", errDumpFormat, n)
			}
			w = &b
		}
		if _, err := io.CopyN(w, br, n); err != nil {
			return "", fmt.Errorf("%w: property block ends early", errDumpFormat)
		}
		if c, err := br.ReadByte(); err != nil || c != '\n' {
			return "", fmt.Errorf("%w: property not followed by a newline", errDumpFormat)
		}
		return b.String(), nil
	}
	for {
		kn, ok, err := readN("KD")
		if err != nil || !ok {
			return props, err
		}
		deleted := kn < 0
		if deleted {
			kn = -1 - kn
		}
		if kn > maxDumpHeader {
			return nil, fmt.Errorf("%w: property name of %d bytes", errDumpFormat, kn)
		}
		key, err := readBlob(kn, true)
		if err != nil {
			return nil, err
		}
		if deleted {
			delete(props, key)
			continue
		}
		vn, ok, err := readN("V")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: property %q has no value", errDumpFormat, key)
		}
		v, err := readBlob(vn, dumpProps[key])
		if err != nil {
			return nil, err
		}
		if dumpProps[key] {
			props[key] = v
		}
	}
}

// svndiffTargetSize returns the size of the text an svndiff stream
// builds, from its window headers alone: svnrdump sends every text as a
// delta, and the size is what decides whether the file is fetched.
func svndiffTargetSize(r io.Reader) (int64, error) {
	br := bufio.NewReader(r)
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return 0, fmt.Errorf("%w: svndiff header: %v", errDumpFormat, err) //nolint:errorlint // the cause is detail: a truncated stream's io.EOF must not read as a clean end to a caller checking for io.EOF
	}
	if string(magic[:3]) != "SVN" || magic[3] > 2 {
		return 0, fmt.Errorf("%w: not an svndiff stream (%q)", errDumpFormat, magic[:])
	}
	var total int64
	for {
		var hdr [5]int64 // source offset, source length, target length, instructions, new data
		for i := range hdr {
			v, err := readSvndiffInt(br)
			if errors.Is(err, io.EOF) && i == 0 {
				return total, nil
			}
			if err != nil {
				return 0, fmt.Errorf("%w: svndiff window: %v", errDumpFormat, err) //nolint:errorlint // the cause is detail: a truncated stream's io.EOF must not read as a clean end to a caller checking for io.EOF
			}
			hdr[i] = v
		}
		total += hdr[2]
		if _, err := io.CopyN(io.Discard, br, hdr[3]+hdr[4]); err != nil {
			return 0, fmt.Errorf("%w: svndiff window: %v", errDumpFormat, err) //nolint:errorlint // the cause is detail: a truncated stream's io.EOF must not read as a clean end to a caller checking for io.EOF
		}
	}
}

// readSvndiffInt reads svndiff's variable-length integer: seven bits a
// byte, most significant first, the high bit set on all but the last.
func readSvndiffInt(br *bufio.Reader) (int64, error) {
	var v int64
	for i := 0; ; i++ {
		c, err := br.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if i == 9 {
			return 0, errors.New("integer too long")
		}
		v = v<<7 | int64(c&0x7f)
		if c&0x80 == 0 {
			return v, nil
		}
	}
}
