package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
)

// Write writes f to path atomically: a temp file in the same directory, synced, then
// renamed over path, so a crash leaves either the old or the new file, never half of one.
// A file without a run id gets one first (File.EnsureRunID).
func Write(path string, f *File) error {
	f.EnsureRunID()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	b = append(b, '\n')
	return WriteFileAtomic(path, b)
}

// WriteFileAtomic writes b to path through a synced temp file in the same directory,
// renamed over path: readers see the old file or the new one, never half of one. A path
// that exists and is not a regular file (/dev/null, /dev/stdout, a named pipe) is written
// in place instead: a rename would replace the device or pipe with a file.
func WriteFileAtomic(path string, b []byte) error {
	if _, ok := special(path); ok {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
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

// special says whether path exists and is not a regular file (following symbolic links):
// a device or a named pipe, written in place.
func special(path string) (os.FileInfo, bool) {
	st, err := os.Stat(path)
	return st, err == nil && !st.Mode().IsRegular() && !st.IsDir()
}

// CheckWritable verifies, before any work, that a results file can be created at path
// (or, for a device, that it can be opened for writing; a named pipe is not opened, as
// that would wait for its reader).
func CheckWritable(path string) error {
	if st, ok := special(path); ok {
		if st.Mode()&os.ModeNamedPipe != 0 {
			return nil
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("results file %s is not writable: %w", path, errors.Unwrap(err))
		}
		return f.Close()
	}
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

// ErrNotResults is wrapped by Read for a file that is not a pgceiling results file, or
// whose content does not have the types the format says.
var ErrNotResults = errors.New("not a pgceiling results file")

// ErrNewerFormat is matched (errors.Is) by Read's error for a results file written by a
// newer pgceiling in a format this one cannot read.
var ErrNewerFormat = errors.New("results file of a newer format")

// newerFormat is the error for a results file of a newer format.
type newerFormat struct {
	name   string
	format int64
}

func (e *newerFormat) Error() string {
	return fmt.Sprintf("%s was written by a newer pgceiling (results format %d); this one (%s) reads format %d",
		e.name, e.format, ToolVersion, FormatVersion)
}

func (e *newerFormat) Is(target error) bool { return target == ErrNewerFormat }

// damaged is the error for a results file with a value of the wrong type: it is
// pgceiling's, so its message does not say otherwise, but it matches ErrNotResults.
type damaged struct{ msg string }

func (e *damaged) Error() string        { return e.msg }
func (e *damaged) Is(target error) bool { return target == ErrNotResults }

// Read reads and checks a results file: valid JSON, pgceiling's, a known format version.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	return Decode(b, path)
}

// Decode parses the bytes of a results file; name is used in messages. The header is
// checked first, so a file of a newer format is named as such whatever else changed in
// it; a value of the wrong type is named by its path in the file
// ("sweeps[0].probes[2].target_rate"), never by Go's names. A file without a run id gets
// one derived from its content (File.EnsureRunID).
func Decode(b []byte, name string) (*File, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s is empty: %w", name, ErrNotResults)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (truncated or damaged?): %v: %w", name, err, ErrNotResults)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s holds %s, not a results object: %w", name, jsonKind(doc), ErrNotResults)
	}
	if tool, _ := obj["tool"].(string); tool != "pgceiling" {
		return nil, fmt.Errorf("%s has no pgceiling header: %w", name, ErrNotResults)
	}
	num, _ := obj["format_version"].(json.Number)
	version, err := num.Int64()
	if err != nil {
		return nil, fmt.Errorf("%s has no results format version: %w", name, ErrNotResults)
	}
	if version > FormatVersion {
		return nil, &newerFormat{name: name, format: version}
	}
	if version != FormatVersion {
		return nil, fmt.Errorf("%s has results format %d; this pgceiling %s reads format %d: %w",
			name, version, ToolVersion, FormatVersion, ErrNotResults)
	}
	if te := checkTypes(doc, reflect.TypeFor[File](), ""); te != nil {
		return nil, &damaged{fmt.Sprintf("results file %s: %v", name, te)}
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		// checkTypes found nothing wrong, so this is a case it does not model: say what
		// json found, in the file's terms.
		return nil, &damaged{fmt.Sprintf("results file %s: %s", name, plainJSONError(err))}
	}
	f.EnsureRunID()
	return &f, nil
}
