package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes f to path atomically: a temp file in the same directory, synced, then
// renamed over path, so a crash leaves either the old or the new file, never half of one.
func Write(path string, f *File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	b = append(b, '\n')
	return WriteFileAtomic(path, b)
}

// WriteFileAtomic writes b to path through a synced temp file in the same directory,
// renamed over path: readers see the old file or the new one, never half of one.
func WriteFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CheckWritable verifies, before any work, that a results file can be created at path.
func CheckWritable(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("results file %s: directory %s: %w", path, dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("results file %s: %s is not a directory", path, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("results file %s is not writable: %w", path, errors.Unwrap(err))
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// ErrNotResults is wrapped by Read for a file that is not a pgceiling results file.
var ErrNotResults = errors.New("not a pgceiling results file")

// Read reads and checks a results file: valid JSON, pgceiling's, a known format version.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	return Decode(b, path)
}

// Decode parses the bytes of a results file; name is used in messages.
func Decode(b []byte, name string) (*File, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s is empty: %w", name, ErrNotResults)
	}
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&f); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s is not valid JSON (truncated or damaged?): %v: %w", name, err, ErrNotResults)
		}
		return nil, fmt.Errorf("%s: %v: %w", name, err, ErrNotResults)
	}
	if f.Tool != "pgceiling" {
		return nil, fmt.Errorf("%s has no pgceiling header: %w", name, ErrNotResults)
	}
	if f.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%s has results format %d; this pgceiling %s reads format %d: %w",
			name, f.FormatVersion, ToolVersion, FormatVersion, ErrNotResults)
	}
	return &f, nil
}
