package bootstrap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// fakeHost is a host in memory that runs the argv Run sends: the few
// coreutils and systemctl calls a bootstrap makes, over a map of files, with
// a systemd that knows one unit file at a time. Every call is logged.
type fakeHost struct {
	uname string
	uid   string
	home  string
	files map[string]*fakeFile
	// systemd
	loaded  map[string]string // unit -> unit file content at the last daemon-reload
	enabled map[string]bool
	active  map[string]bool
	starts  map[string]int
	calls   [][]string
}

type fakeFile struct {
	dir  bool
	link string // symlink target
	data []byte
	mode string
}

func newFakeHost() *fakeHost {
	h := &fakeHost{uname: "Linux x86_64", uid: "0", home: "/root",
		files: map[string]*fakeFile{}, loaded: map[string]string{}, enabled: map[string]bool{},
		active: map[string]bool{}, starts: map[string]int{}}
	for _, d := range []string{"/", "/root", "/etc", "/etc/systemd", "/etc/systemd/system", "/usr", "/usr/local", "/var", "/var/lib"} {
		h.files[d] = &fakeFile{dir: true, mode: "0755"}
	}
	return h
}

var errExit = errors.New("exit status 1")

// mutating reports whether argv changes the host.
func mutating(argv []string) bool {
	switch argv[0] {
	case "mkdir", "dd", "chmod", "rm", "mv", "ln":
		return true
	case "systemctl":
		return argv[1] != "show" && argv[1] != "is-enabled" && argv[1] != "is-active"
	}
	return false
}

func (h *fakeHost) writes() [][]string {
	var w [][]string
	for _, c := range h.calls {
		if mutating(c) {
			w = append(w, c)
		}
	}
	return w
}

func (h *fakeHost) parentOK(p string) bool {
	d, ok := h.files[path.Dir(p)]
	return ok && d.dir
}

// args drops a leading "--" from the operands.
func operands(a []string) []string {
	var out []string
	for _, w := range a {
		if w != "--" {
			out = append(out, w)
		}
	}
	return out
}

func (h *fakeHost) Run(_ context.Context, argv []string, stdin io.Reader) ([]byte, []byte, error) {
	h.calls = append(h.calls, append([]string(nil), argv...))
	fail := func(format string, a ...any) ([]byte, []byte, error) {
		return nil, []byte(fmt.Sprintf(format, a...)), errExit
	}
	ops := operands(argv[1:])
	switch argv[0] {
	case "uname":
		return []byte(h.uname + "\n"), nil, nil
	case "id":
		return []byte(h.uid + "\n"), nil, nil
	case "printenv":
		return []byte(h.home + "\n"), nil, nil
	case "sha256sum":
		f, ok := h.files[ops[0]]
		if !ok || f.dir || f.link != "" {
			return fail("sha256sum: %s: No such file", ops[0])
		}
		sum := sha256.Sum256(f.data)
		return []byte(hex.EncodeToString(sum[:]) + "  " + ops[0] + "\n"), nil, nil
	case "test":
		f, ok := h.files[ops[1]]
		if ops[0] != "-f" || !ok || f.dir || f.link != "" {
			return nil, nil, errExit
		}
		return nil, nil, nil
	case "cat":
		f, ok := h.files[ops[0]]
		if !ok || f.dir {
			return fail("cat: %s: No such file", ops[0])
		}
		return bytes.Clone(f.data), nil, nil
	case "readlink":
		f, ok := h.files[ops[0]]
		if !ok || f.link == "" {
			return nil, nil, errExit
		}
		return []byte(f.link + "\n"), nil, nil
	case "mkdir":
		parents, mode := false, "0777"
		var dirs []string
		for i := 0; i < len(ops); i++ {
			switch ops[i] {
			case "-p":
				parents = true
			case "-m":
				mode = ops[i+1]
				i++
			default:
				dirs = append(dirs, ops[i])
			}
		}
		for _, d := range dirs {
			if f, ok := h.files[d]; ok {
				if parents && f.dir {
					continue
				}
				return fail("mkdir: %s: exists", d)
			}
			if !parents && !h.parentOK(d) {
				return fail("mkdir: %s: no parent", d)
			}
			for p := d; p != "/"; p = path.Dir(p) {
				if _, ok := h.files[p]; !ok {
					h.files[p] = &fakeFile{dir: true, mode: "0755"}
				}
			}
			h.files[d].mode = mode
		}
		return nil, nil, nil
	case "dd":
		of := strings.TrimPrefix(ops[0], "of=")
		if !h.parentOK(of) {
			return fail("dd: %s: no directory", of)
		}
		var data []byte
		if stdin != nil {
			data, _ = io.ReadAll(stdin)
		}
		h.files[of] = &fakeFile{data: data, mode: "0644"}
		return nil, nil, nil
	case "chmod":
		f, ok := h.files[ops[1]]
		if !ok {
			return fail("chmod: %s: No such file", ops[1])
		}
		f.mode = ops[0]
		return nil, nil, nil
	case "rm":
		target := ops[len(ops)-1]
		for p := range h.files {
			if p == target || strings.HasPrefix(p, target+"/") {
				delete(h.files, p)
			}
		}
		return nil, nil, nil
	case "ln":
		target, link := ops[1], ops[2]
		if _, ok := h.files[link]; ok || !h.parentOK(link) {
			return fail("ln: %s: exists or no directory", link)
		}
		h.files[link] = &fakeFile{link: target, mode: "0777"}
		return nil, nil, nil
	case "mv":
		var names []string
		for _, w := range ops {
			if !strings.HasPrefix(w, "-") {
				names = append(names, w)
			}
		}
		src, dst := names[0], names[1]
		if _, ok := h.files[src]; !ok {
			return fail("mv: %s: No such file", src)
		}
		if d, ok := h.files[dst]; ok && d.dir {
			for p := range h.files {
				if strings.HasPrefix(p, dst+"/") {
					return fail("mv: %s: directory not empty", dst)
				}
			}
		}
		if !h.parentOK(dst) {
			return fail("mv: %s: no directory", dst)
		}
		moved := map[string]*fakeFile{}
		for p, f := range h.files {
			if p == src || strings.HasPrefix(p, src+"/") {
				moved[dst+strings.TrimPrefix(p, src)] = f
				delete(h.files, p)
			}
		}
		for p := range h.files {
			if p == dst || strings.HasPrefix(p, dst+"/") {
				delete(h.files, p)
			}
		}
		for p, f := range moved {
			h.files[p] = f
		}
		return nil, nil, nil
	case "systemctl":
		return h.systemctl(ops)
	}
	return fail("%s: command not found", argv[0])
}

func (h *fakeHost) unitFile(unit string) (string, bool) {
	f, ok := h.files["/etc/systemd/system/"+unit]
	if !ok {
		return "", false
	}
	return string(f.data), true
}

func (h *fakeHost) systemctl(ops []string) ([]byte, []byte, error) {
	unit := ops[len(ops)-1]
	switch ops[0] {
	case "daemon-reload":
		h.loaded = map[string]string{}
		for p, f := range h.files {
			if path.Dir(p) == "/etc/systemd/system" && !f.dir {
				h.loaded[path.Base(p)] = string(f.data)
			}
		}
		return nil, nil, nil
	case "show":
		text, onDisk := h.unitFile(unit)
		loaded, isLoaded := h.loaded[unit]
		state, need := "not-found", "no"
		if isLoaded {
			state = "loaded"
			if !onDisk || text != loaded {
				need = "yes"
			}
		}
		return []byte("LoadState=" + state + "\nNeedDaemonReload=" + need + "\n"), nil, nil
	case "is-enabled":
		if h.enabled[unit] {
			return []byte("enabled\n"), nil, nil
		}
		return []byte("disabled\n"), nil, errExit
	case "is-active":
		if h.active[unit] {
			return []byte("active\n"), nil, nil
		}
		return []byte("inactive\n"), nil, errExit
	case "enable":
		if _, ok := h.loaded[unit]; !ok {
			return nil, []byte("Unit " + unit + " not found"), errExit
		}
		h.enabled[unit] = true
		return nil, nil, nil
	case "start", "restart":
		if _, ok := h.loaded[unit]; !ok {
			return nil, []byte("Unit " + unit + " not found"), errExit
		}
		h.active[unit] = true
		h.starts[unit]++
		return nil, nil, nil
	}
	return nil, []byte("unknown systemctl verb"), errExit
}

// listing is the host's files, one line each, for failure messages.
func (h *fakeHost) listing() string {
	var ps []string
	for p, f := range h.files {
		switch {
		case f.link != "":
			ps = append(ps, p+" -> "+f.link)
		case f.dir:
			ps = append(ps, p+"/ "+f.mode)
		default:
			ps = append(ps, fmt.Sprintf("%s %s %d bytes", p, f.mode, len(f.data)))
		}
	}
	sort.Strings(ps)
	return strings.Join(ps, "\n")
}
