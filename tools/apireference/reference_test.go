package apireference

import (
	"bytes"
	"cmp"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/payments-outbox/payments-outbox/tools/internal/oas"
)

// need returns the path of the first of names installed, or skips the test
// without any — and fails it under CI, which must never go green by skipping.
func need(t *testing.T, why string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but none of %v is installed: %s", names, why)
	}
	t.Skipf("none of %v is installed: %s", names, why)
	return ""
}

// TestReferenceShowsEveryOperation renders the reference as make api-docs
// does and opens each page in headless Chromium, as a person opens the file
// from disk: from the page's menu it goes to each section and scrolls to
// each operation, and every operation of the document — method and path,
// listed from the YAML — must be there. The browser's only network is a
// proxy on loopback that refuses every connection, and every request a page
// made must be to its own file (or data:/blob:), or refused by the page's
// own Content-Security-Policy (docs/api/page.hbs): a page that works only
// online fails. No script may throw or log an error.
func TestReferenceShowsEveryOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("renders the reference with npm packages and opens it in Chromium")
	}
	need(t, "scripts/api-docs.sh installs Redocly CLI with it (Debian's npm package)", "npm")
	// Debian's chromium, which .ci/run installs; $CHROMIUM, or Chrome, elsewhere.
	browser := need(t, ".ci/run installs Debian's chromium package",
		cmp.Or(os.Getenv("CHROMIUM"), "chromium"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

	dir := t.TempDir()
	build := exec.CommandContext(t.Context(), "bash", "../../scripts/api-docs.sh", dir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/api-docs.sh: %v\n%s", err, out)
	}
	docs, err := filepath.Glob("../../api/*.openapi.yaml")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no OpenAPI document in api/: %v", err)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}

	// Every connection the browser opens goes to this proxy, which closes
	// it: nothing leaves the machine, Chromium's own background requests
	// (component updates, sign-in) included, and a page that needed the
	// network would fail to load it.
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return // closed at the end of the test
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { proxy.Close() })

	var chromiumLog bytes.Buffer
	actx, cancel := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.UserDataDir(t.TempDir()), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.ProxyServer("http://"+proxy.Addr().String()), chromedp.CombinedOutput(&chromiumLog))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v\n%s", browser, err, chromiumLog.String())
	}

	for _, doc := range docs {
		name := strings.TrimSuffix(filepath.Base(doc), ".openapi.yaml")
		t.Run(name, func(t *testing.T) {
			if !bytes.Contains(index, []byte(`href="`+name+`.html"`)) {
				t.Errorf("index.html does not link %s.html", name)
			}
			src, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			want, err := oas.Operations(src)
			if err != nil {
				t.Fatal(err)
			}
			page := &pageLog{}
			ctx, cancel := chromedp.NewContext(bctx, chromedp.WithListener(page.listen))
			defer cancel()
			ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()

			found, err := operationsShown(ctx, "file://"+filepath.Join(dir, name+".html"))
			if err != nil {
				t.Fatalf("%s.html: %v", name, err)
			}
			for _, op := range want {
				if !slices.Contains(found, op.Method+" "+op.Path) {
					t.Errorf("%s.html does not show %s; it shows %v", name, op, found)
				}
			}
			if len(found) != len(want) {
				t.Errorf("%s.html shows %d operations, the document has %d: %v", name, len(found), len(want), found)
			}
			for _, p := range page.problems() {
				t.Error(p)
			}
		})
	}
}

// operationsShown opens the reference page at url and returns the method
// and path of each operation it shows, as a reader finds them: it clicks
// each section of the menu, and scrolls to each operation of the section
// (the renderer draws an operation when it comes into view).
func operationsShown(ctx context.Context, url string) ([]string, error) {
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return nil, err
	}
	wait := []chromedp.PollOption{chromedp.WithPollingTimeout(0), chromedp.WithPollingInterval(50 * time.Millisecond)}
	// The menu's sections, each a link to its page: "/payments", "/contract".
	sections, err := chromedp.Run(ctx, chromedp.PollFunction[[]string](`() => {
		const links = [...document.querySelectorAll('[data-component-name="Menu/MenuItem"] a[href^="/"]')]
			.map(a => a.getAttribute("href")).filter(h => h !== "/");
		return links.length ? links : null;
	}`, wait...))
	if err != nil {
		return nil, err
	}
	var shown []string
	for _, section := range sections {
		// Click it; once its page shows, the ids of its operations.
		ids, err := chromedp.Run(ctx, chromedp.PollFunction[[]string](`(section) => {
			if (location.hash !== "#" + section) {
				document.querySelector('[data-component-name="Menu/MenuItem"] a[href="' + section + '"]').click();
				return null;
			}
			const ids = [...document.querySelectorAll("[data-section-id]")]
				.map(e => e.getAttribute("data-section-id")).filter(id => id.startsWith(section + "/"));
			return ids.length ? ids : null;
		}`, append(wait, chromedp.WithPollingArgs(section))...))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			// The operation's panel shows its method on one line and its
			// path on the next.
			op, err := chromedp.Run(ctx, chromedp.PollFunction[string](`(id) => {
				const s = [...document.querySelectorAll("[data-section-id]")].find(e => e.getAttribute("data-section-id") === id);
				if (!s) return null;
				s.scrollIntoView();
				const lines = s.innerText.split("\n").map(l => l.trim());
				for (let i = 0; i + 1 < lines.length; i++) {
					if (/^(GET|PUT|POST|DELETE|OPTIONS|HEAD|PATCH|TRACE)$/.test(lines[i]) && lines[i + 1].startsWith("/")) {
						return lines[i] + " " + lines[i + 1];
					}
				}
				return null;
			}`, append(wait, chromedp.WithPollingArgs(id))...))
			if err != nil {
				return nil, err
			}
			shown = append(shown, op)
		}
	}
	return shown, nil
}

// pageLog records what a page did that the test forbids: requests beyond
// its own file that its policy did not refuse, exceptions, errors.
type pageLog struct {
	mu       sync.Mutex
	requests map[network.RequestID]string // URL of each request not yet refused
	errors   []string
}

// refusedImage is the console's note of an image the page's policy refused:
// the renderer's footer logo, which it would fetch from its vendor's CDN.
var refusedImage = regexp.MustCompile(`^Loading the image '[^']+' violates the following Content Security Policy directive: "img-src `)

func (p *pageLog) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.requests == nil {
		p.requests = map[network.RequestID]string{}
	}
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if u := e.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
			p.requests[e.RequestID] = u
		}
	case *network.EventLoadingFailed:
		if e.BlockedReason == network.BlockedReasonCsp {
			delete(p.requests, e.RequestID) // refused by the page's policy, never sent
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		p.errors = append(p.errors, "uncaught exception: "+text)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			p.errors = append(p.errors, "console."+string(e.Type)+" called")
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError && !refusedImage.MatchString(e.Entry.Text) {
			p.errors = append(p.errors, "browser log: "+e.Entry.Text)
		}
	}
}

func (p *pageLog) problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.errors)
	for _, u := range p.requests {
		out = append(out, "the page requested "+u+": it must need nothing but its own file")
	}
	return out
}

// TestRedoclyIsPinnedOnce: the reference is rendered by the Redocly CLI
// that lints the documents, at the same version.
func TestRedoclyIsPinnedOnce(t *testing.T) {
	pin := regexp.MustCompile(`@redocly/cli@[0-9][^\s"']*`)
	var pins []string
	for _, f := range []string{"../../scripts/api-lint.sh", "../../scripts/api-docs.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := pin.FindString(string(b))
		if p == "" {
			t.Fatalf("%s pins no @redocly/cli", f)
		}
		pins = append(pins, p)
	}
	if pins[0] != pins[1] {
		t.Errorf("scripts/api-lint.sh pins %s, scripts/api-docs.sh %s: one version for both", pins[0], pins[1])
	}
}
