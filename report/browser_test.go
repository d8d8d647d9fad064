package report

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The HTML report as a person sees it: headless Chromium (Debian's chromium, installed by
// scripts/ensure-chromium) opens report.html from disk, with the network blocked, at a
// desktop and a phone width. Screenshots of both are kept in artefactDir.

// chromium finds the browser: $PGCEILING_CHROMIUM, else chromium, chromium-browser or
// google-chrome on PATH. A missing browser fails the test: the suite installs it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PGCEILING_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no headless Chromium for the browser test of report.html: run scripts/ensure-chromium " +
		"(installs Debian's chromium) or set PGCEILING_CHROMIUM to a Chromium binary")
	return ""
}

// artefactDir is where the browser test leaves its screenshots: $PGCEILING_ARTEFACTS, else
// report/testdata/out (ignored by git).
func artefactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PGCEILING_ARTEFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artefact directory: %v", err)
	}
	return dir
}

// pageCheck is what the injected script measures once the page has loaded.
type pageCheck struct {
	InnerWidth  int      `json:"innerWidth"`
	Images      int      `json:"images"`
	Undecoded   []string `json:"undecoded"`
	Network     []string `json:"network"`
	ScrollWidth int      `json:"scrollWidth"`
	ClientWidth int      `json:"clientWidth"`
}

// checkScript measures, on load: the images that did not decode, every resource fetched
// or referenced over the network, and the page's width against its viewport's. It posts
// them as JSON to the frame around the page (see framePage).
const checkScript = `<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var urls = performance.getEntriesByType("resource").map(function (r) { return r.name; });
  document.querySelectorAll("[src],[href],[srcset],[poster]").forEach(function (e) {
    ["src", "href", "srcset", "poster"].forEach(function (a) { if (e.hasAttribute(a)) urls.push(e.getAttribute(a)); });
  });
  Array.prototype.slice.call(document.styleSheets).forEach(function (s) {
    Array.prototype.slice.call(s.cssRules).forEach(function (r) { var m = r.cssText.match(/url\(([^)]*)\)/g); if (m) urls = urls.concat(m); });
  });
  var r = {
    innerWidth: window.innerWidth,
    images: imgs.length,
    undecoded: imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).map(function (i) { return i.alt; }),
    network: urls.map(function (u) { return u.replace(/^url\(\s*["']?/i, "").slice(0, 100); })
      .filter(function (u) { return /^\s*((https?|ftp|wss?):)?\/\//i.test(u); }),
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: document.documentElement.clientWidth
  };
  parent.postMessage(JSON.stringify(r), "*");
});
</script>
`

// framePage is a page that shows src in a frame of exactly width x height CSS pixels
// (headless Chromium's windows are at least 500 px wide: a phone's 390 px needs a frame)
// and writes what the framed page posts into <pre id="pgceiling-check">.
func framePage(src string, width, height int) string {
	return fmt.Sprintf(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>body{margin:0;background:#888}iframe{border:0;display:block;background:#fff}</style>
<script>
window.addEventListener("message", function (e) {
  var pre = document.createElement("pre");
  pre.id = "pgceiling-check";
  pre.textContent = e.data;
  document.body.appendChild(pre);
});
</script></head>
<body><iframe src="%s" width="%d" height="%d"></iframe></body></html>
`, html.EscapeString(src), width, height)
}

// runChromium runs headless Chromium with the network blocked (every host name resolves
// to nothing, any proxy connection is refused) and returns its standard output.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--metrics-recording-only", "--hide-scrollbars",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--force-device-scale-factor=1", "--virtual-time-budget=10000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return stdout.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func TestHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	f := readFixture(t, "search.json")
	dir := t.TempDir()
	if _, err := WriteAll(dir, f); err != nil {
		t.Fatalf("WriteAll: %v", err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "</body>") {
		t.Fatal("report.html has no </body>")
	}
	checked := filepath.Join(dir, "report-checked.html")
	if err := os.WriteFile(checked, []byte(strings.Replace(string(page), "</body>", checkScript+"</body>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	charts, err := Charts(f)
	if err != nil {
		t.Fatal(err)
	}
	out := artefactDir(t)
	for _, width := range []int{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			frame := filepath.Join(dir, fmt.Sprintf("frame-%d.html", width))
			if err := os.WriteFile(frame, []byte(framePage("report-checked.html", width, 900)), 0o644); err != nil {
				t.Fatal(err)
			}
			dom := runChromium(t, bin, fmt.Sprintf("--window-size=%d,1000", max(width, 500)), "--dump-dom", "file://"+frame)
			start := strings.Index(dom, `<pre id="pgceiling-check">`)
			if start < 0 {
				t.Fatalf("Chromium at %d px: the check did not run (no #pgceiling-check in the DOM):\n%s", width, tail(dom, 500))
			}
			body := dom[start+len(`<pre id="pgceiling-check">`):]
			body = body[:strings.Index(body, "</pre>")]
			var c pageCheck
			if err := json.Unmarshal([]byte(html.UnescapeString(body)), &c); err != nil {
				t.Fatalf("Chromium at %d px: the check's result %q: %v", width, body, err)
			}
			t.Logf("Chromium at %d px: %+v", width, c)
			if c.InnerWidth != width {
				t.Errorf("the page's viewport is %d px wide, want %d: the checks were made at another width", c.InnerWidth, width)
			}
			if c.Images != len(charts) || len(c.Undecoded) > 0 {
				t.Errorf("at %d px: %d images (want %d charts), not decoded: %q", width, c.Images, len(charts), c.Undecoded)
			}
			if len(c.Network) > 0 {
				t.Errorf("at %d px: the page needs the network: %q", width, c.Network)
			}
			if width == 1280 && c.ScrollWidth > c.ClientWidth {
				t.Errorf("at 1280 px the page scrolls sideways: scrollWidth %d > clientWidth %d", c.ScrollWidth, c.ClientWidth)
			}
			// The screenshot: the report itself, framed at the width.
			shotFrame := filepath.Join(dir, fmt.Sprintf("shot-%d.html", width))
			if err := os.WriteFile(shotFrame, []byte(framePage("report.html", width, 2400)), 0o644); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(out, fmt.Sprintf("report-%dpx.png", width))
			runChromium(t, bin, fmt.Sprintf("--window-size=%d,2400", max(width, 500)), "--screenshot="+shot, "file://"+shotFrame)
			if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
				t.Errorf("no screenshot at %s: %v", shot, err)
			}
		})
	}
}
