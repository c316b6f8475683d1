package httppost

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/secret"
)

// ReadAtSend reads one secret key (<key>_env / <key>_file) for a Send. An
// unset optional key is "". A failure is a permanent *im.SendError that
// names the key and the source and says how to recover: a retry cannot
// create a file, but `aicr dispatch retry` after the fix can deliver.
func ReadAtSend(key, env, file, baseDir string) (string, error) {
	v, err := ReadKey(key, env, file, baseDir)
	if err != nil {
		return "", &im.SendError{Reason: im.ReasonAuth,
			Err: fmt.Errorf("%w; fix it, then `aicr dispatch retry` re-sends", err)}
	}
	return v, nil
}

// ReadKey reads one secret key now; the error names the key and source.
// An unset optional key is "".
func ReadKey(key, env, file, baseDir string) (string, error) {
	ref := secret.Ref{Env: env, File: file}
	if ref.IsZero() {
		return "", nil
	}
	v, err := ref.InDir(baseDir).Read()
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return v.Reveal(), nil
}

// Encode serializes v as the platforms receive it: no HTML escaping
// (Chinese and '<' stay as they are, so the byte count is the real one)
// and no trailing newline.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
