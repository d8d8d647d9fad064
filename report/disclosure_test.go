package report

import (
	"bytes"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// settingOrder stands for observe.SettingNames (report does not import observe).
var settingOrder = []string{"fsync", "synchronous_commit", "full_page_writes", "wal_level",
	"wal_sync_method", "commit_delay", "shared_buffers", "effective_cache_size",
	"max_wal_size", "checkpoint_timeout", "wal_compression", "data_checksums", "max_connections"}

func TestDisclosureGolden(t *testing.T) {
	for _, fx := range []string{"search", "fsync-off"} {
		d := readFixture(t, fx+".json").Server
		var b bytes.Buffer
		if err := WriteDisclosure(&b, d, settingOrder); err != nil {
			t.Fatalf("WriteDisclosure(%s.json): %v", fx, err)
		}
		b.WriteString("=====\n")
		if err := WriteTableSizes(&b, d.Tables, d.SharedBuffersBytes); err != nil {
			t.Fatalf("WriteTableSizes(%s.json): %v", fx, err)
		}
		golden(t, fx+".golden.inspect", b.Bytes())
	}
}

// TestDisclosureNoSchema: a server without pgceiling's schema says how to make one,
// and settings outside the order follow it by name.
func TestDisclosureNoSchema(t *testing.T) {
	for _, tc := range []struct {
		d    result.Disclosure
		want string
	}{
		{result.Disclosure{Version: "17", Embedded: true, ServerLocal: true, Settings: map[string]string{"zz": "1", "aa": "2", "fsync": "on"}},
			"PostgreSQL 17, the throwaway server started for this command, on this machine\nclient: 0 cores, 0 B memory\n" +
				"server: 0 cores, 0 B memory (same machine)\n\nSettings\n  fsync  on\n  aa     2\n  zz     1\n\npgceiling tables\n" +
				"  none: the throwaway server is new and has no pgceiling schema (run and search create and fill one)\n\n" +
				"No warnings: fsync, full_page_writes and synchronous_commit are durable.\n"},
		{result.Disclosure{Version: "16", Warnings: []string{"fsync=off: not durable"}},
			"PostgreSQL 16, remote (or not visible from this machine)\nclient: 0 cores, 0 B memory\n" +
				"server: cores and memory unknown (not local)\n\nSettings\n\npgceiling tables\n" +
				"  none: this database has no pgceiling schema (`pgceiling init` creates it)\n\n" +
				"Warnings (run and search refuse this server unless --allow-unsafe-server)\n  ! fsync=off: not durable\n"},
	} {
		var b bytes.Buffer
		if err := WriteDisclosure(&b, &tc.d, settingOrder); err != nil || b.String() != tc.want {
			t.Errorf("WriteDisclosure(%+v) = %v:\n%s\nwant:\n%s", tc.d, err, b.String(), tc.want)
		}
	}
}

func TestBytesHuman(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1536, "1.5 KiB"}, {128 << 20, "128.0 MiB"}, {-5, "-5 B"}, {8 << 30, "8.0 GiB"},
	} {
		if got := bytesHuman(tc.n); got != tc.want {
			t.Errorf("bytesHuman(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
