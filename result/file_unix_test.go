//go:build unix

package result

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteFileAtomicSpecial: a results path that is a named pipe (as /dev/null is a
// device) is written in place, not replaced by a renamed file: `--json /dev/null` once
// turned the machine's /dev/null into a regular file.
func TestWriteFileAtomicSpecial(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "results.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	if err := CheckWritable(fifo); err != nil {
		t.Fatalf("CheckWritable(fifo): %v", err)
	}
	// The reader opens first, without waiting for a writer, so the write cannot block and
	// a pipe replaced by a file leaves the reader with nothing.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("open the pipe for reading: %v", err)
	}
	defer r.Close()
	want := []byte("{\"x\": 1}\n")
	if err := WriteFileAtomic(fifo, want); err != nil {
		t.Fatalf("WriteFileAtomic(fifo): %v", err)
	}
	if b, _ := io.ReadAll(r); string(b) != string(want) {
		t.Errorf("the pipe's reader got %q, want %q", b, want)
	}
	st, err := os.Lstat(fifo)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("after WriteFileAtomic the path is %v (err %v), want the named pipe still there", st.Mode(), err)
	}
	if err := CheckWritable(os.DevNull); err != nil {
		t.Errorf("CheckWritable(%s): %v", os.DevNull, err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is not a character device (%v, %v)", os.DevNull, st.Mode(), err)
	}
}
