package p4

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Record is one dictionary of `p4 -G` output (or one `-ztag` record), keys
// in the order p4 wrote them. Values stay raw bytes: on a non-unicode
// server file names and descriptions are whatever bytes the client sent.
type Record struct {
	Keys   []string
	Values map[string][]byte
}

// Get returns the value of key as a string ("" when absent).
func (r Record) Get(key string) string { return string(r.Values[key]) }

// Has reports whether the record has key, even with an empty value.
func (r Record) Has(key string) bool { _, ok := r.Values[key]; return ok }

// Set appends key (or replaces its value, keeping its position).
func (r *Record) Set(key string, val []byte) {
	if r.Values == nil {
		r.Values = map[string][]byte{}
	}
	if _, ok := r.Values[key]; !ok {
		r.Keys = append(r.Keys, key)
	}
	r.Values[key] = val
}

// Code is the record's "code": stat, error, info, text or binary.
func (r Record) Code() string { return r.Get("code") }

// Marshal type bytes. The p4 client writes only '{', 's', 'i' and '0'
// (PythonDict in client/clientusermsh.cc of the Perforce client source);
// 'u' is accepted on input as the client itself accepts it.
const (
	mDict   = '{'
	mEnd    = '0'
	mString = 's'
	mUni    = 'u'
	mInt    = 'i'
)

// maxMarshalString bounds one string so a corrupt length cannot make the
// decoder allocate gigabytes; p4 sends file content in chunks far below it.
const maxMarshalString = 64 << 20

// ErrMarshal is wrapped by every decoding error of -G output.
var ErrMarshal = errors.New("bad p4 -G output")

// MarshalDecoder reads the concatenated dictionaries `p4 -G` prints.
type MarshalDecoder struct {
	r   *bufio.Reader
	off int64
}

// NewMarshalDecoder reads records from r.
func NewMarshalDecoder(r io.Reader) *MarshalDecoder {
	return &MarshalDecoder{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next record, or io.EOF after the last one.
func (d *MarshalDecoder) Next() (Record, error) {
	b, err := d.r.ReadByte()
	if err == io.EOF {
		return Record{}, io.EOF
	}
	if err != nil {
		return Record{}, err
	}
	d.off++
	if b != mDict {
		return Record{}, d.errf("expected '{' at offset %d, got %q", d.off-1, b)
	}
	rec := Record{Values: map[string][]byte{}}
	for {
		t, err := d.byte()
		if err != nil {
			return Record{}, err
		}
		if t == mEnd {
			return rec, nil
		}
		if t != mString && t != mUni {
			return Record{}, d.errf("dictionary key of type %q at offset %d", t, d.off-1)
		}
		key, err := d.str()
		if err != nil {
			return Record{}, err
		}
		t, err = d.byte()
		if err != nil {
			return Record{}, err
		}
		var val []byte
		switch t {
		case mString, mUni:
			val, err = d.str()
		case mInt:
			var n int32
			n, err = d.int32()
			val = []byte(strconv.Itoa(int(n)))
		default:
			return Record{}, d.errf("value of type %q at offset %d", t, d.off-1)
		}
		if err != nil {
			return Record{}, err
		}
		if _, dup := rec.Values[string(key)]; !dup {
			rec.Keys = append(rec.Keys, string(key))
		}
		rec.Values[string(key)] = val
	}
}

func (d *MarshalDecoder) errf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMarshal, fmt.Sprintf(format, args...))
}

func (d *MarshalDecoder) byte() (byte, error) {
	b, err := d.r.ReadByte()
	if err == io.EOF {
		return 0, d.errf("truncated record at offset %d", d.off)
	}
	d.off++
	return b, err
}

func (d *MarshalDecoder) int32() (int32, error) {
	var buf [4]byte
	if _, err := io.ReadFull(d.r, buf[:]); err != nil {
		return 0, d.errf("truncated int at offset %d", d.off)
	}
	d.off += 4
	return int32(binary.LittleEndian.Uint32(buf[:])), nil
}

func (d *MarshalDecoder) str() ([]byte, error) {
	n, err := d.int32()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > maxMarshalString {
		return nil, d.errf("string length %d at offset %d", n, d.off-4)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(d.r, buf); err != nil {
		return nil, d.errf("truncated string at offset %d", d.off)
	}
	d.off += int64(n)
	return buf, nil
}

// DecodeMarshal reads every record of b.
func DecodeMarshal(r io.Reader) ([]Record, error) {
	d := NewMarshalDecoder(r)
	var out []Record
	for {
		rec, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}
