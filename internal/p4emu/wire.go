package p4emu

import (
	"encoding/binary"
	"strconv"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// The encoders of p4's two output formats. The adapter only decodes
// them (p4.DecodeMarshal, p4.ParseZtag); the emulator writes them.

// AppendMarshal appends rec in p4's -G encoding. Keys named in ints are
// written as integers, as p4 writes severity, generic and level.
func AppendMarshal(b []byte, rec p4.Record, ints ...string) []byte {
	b = append(b, '{')
	for _, k := range rec.Keys {
		b = appendMarshalString(b, []byte(k))
		v := rec.Values[k]
		isInt := false
		for _, ik := range ints {
			if ik == k {
				isInt = true
			}
		}
		if n, err := strconv.ParseInt(string(v), 10, 32); isInt && err == nil {
			b = append(b, 'i')
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(n)))
			continue
		}
		b = appendMarshalString(b, v)
	}
	return append(b, '0')
}

func appendMarshalString(b, s []byte) []byte {
	b = append(b, 's')
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// AppendZtag appends rec as `p4 -ztag` prints it: one "... key value" line
// per field and a blank line after the record.
func AppendZtag(b []byte, rec p4.Record) []byte {
	for _, k := range rec.Keys {
		if k == "code" {
			continue
		}
		b = append(b, "... "...)
		b = append(b, k...)
		if v := rec.Values[k]; len(v) > 0 {
			b = append(b, ' ')
			b = append(b, v...)
		}
		b = append(b, '\n')
	}
	return append(b, '\n')
}
