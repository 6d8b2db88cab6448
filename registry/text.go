package registry

import (
	"bytes"
	"cmp"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wisent/stado/store"
)

// The human form of the registry's results: each says itself in lines an
// operator reads (the CLI prints them; --json prints the result), or, for a
// list the CLI cuts to the terminal, as a table.

// Words renders an argument vector for reading, quoting the words that
// need it; it is never executed.
func Words(words []string) string {
	out := make([]string, len(words))
	for i, a := range words {
		if a == "" || strings.ContainsAny(a, " \t\"'\\$`;&|<>*?()") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// Lines of push: the revision written (or kept, on a dry run), then what
// changed, one line per kind of change.
func (p Pushed) Lines() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	switch {
	case p.DryRun:
		add("dry run: valid; registry stays at revision %d", p.Revision)
	case p.Unchanged:
		add("no change: registry stays at revision %d, nothing written", p.Revision)
	case p.PreviousRevision == 0:
		add("pushed registry revision %d (first revision)", p.Revision)
	default:
		add("pushed registry revision %d (was %d)", p.Revision, p.PreviousRevision)
	}
	c := p.Change
	if c.Empty() && !p.Unchanged {
		add("  no change")
	}
	for _, l := range []struct {
		label string
		items []string
	}{
		{"targets added", c.TargetsAdded}, {"targets changed", c.TargetsChanged}, {"targets removed", c.TargetsRemoved},
		{"services added", c.ServicesAdded}, {"services changed", c.ServicesChanged}, {"services removed", c.ServicesRemoved},
		{"directory added", c.DirectoryAdded}, {"directory changed", c.DirectoryChanged}, {"directory removed", c.DirectoryRemoved},
		{"releases changed", c.ReleasesChanged},
	} {
		if len(l.items) > 0 {
			add("  %-18s %s", l.label+":", strings.Join(l.items, ", "))
		}
	}
	if c.ResolverChanged {
		add("  service_resolver changed")
	}
	return out
}

// Shown is `registry show`: the current revision, who wrote it and why, the
// resolver's refresh interval and the Summary of the document.
type Shown struct {
	Revision       int64      `json:"revision"`
	Meta           store.Meta `json:"meta"`
	RefreshSeconds int        `json:"refresh_seconds,omitempty"`
	Summary
}

// Show is the Shown of d, read at meta m.
func Show(d *Document, m store.Meta) Shown {
	return Shown{Revision: m.Revision, Meta: m, RefreshSeconds: d.ServiceResolver.RefreshSeconds, Summary: Summarize(d)}
}

// Lines of show: the revision's meta, each target with its services in
// aligned columns, the directory, and how many declarations are incomplete.
func (s Shown) Lines() []string {
	var b bytes.Buffer
	m := s.Meta
	fmt.Fprintf(&b, "registry revision %d\n  writer  %s\n  time    %s\n", s.Revision, m.Writer, m.Time.Format(time.RFC3339))
	if m.Reason != "" {
		fmt.Fprintf(&b, "  reason  %s\n", m.Reason)
	}
	if s.RefreshSeconds > 0 {
		fmt.Fprintf(&b, "  service_resolver.refresh_seconds  %d\n", s.RefreshSeconds)
	}
	fmt.Fprintf(&b, "\ntargets (%d):\n", len(s.Targets))
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, tg := range s.Targets {
		fmt.Fprintf(tw, "  %s\t%s@%s:%d\t%s\n", tg.Name, tg.User, tg.Address, tg.Port, tg.OS)
		for _, sv := range tg.Services {
			what := sv.Program
			if sv.Status == StatusIncomplete {
				what = "declaration_incomplete"
				if sv.IncompleteReason != "" {
					what += " (" + sv.IncompleteReason + ")"
				}
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", sv.Name, sv.Unit, sv.Scope, what)
		}
		for _, l := range releaseLines(tg.Releases) {
			fmt.Fprintf(tw, "    release %s\n", l)
		}
	}
	tw.Flush()
	if len(s.Releases) > 0 {
		fmt.Fprintf(&b, "\nreleases (%d):\n", len(s.Releases))
		for _, l := range releaseLines(s.Releases) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	fmt.Fprintf(&b, "\ndirectory (%d):\n", len(s.Directory))
	for _, e := range s.Directory {
		fmt.Fprintf(&b, "  %s -> %s:%d  callers: %s\n", e.Service, e.Host, e.Port, cmp.Or(strings.Join(e.Callers, ", "), "every target"))
	}
	if s.Incomplete > 0 {
		fmt.Fprintf(&b, "\n%d declaration(s) incomplete: they name a unit but no program, so they cannot be reinstalled\n", s.Incomplete)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// releaseLines says each declared version of m, by product:
// "brama 1.4.3 (pinned)".
func releaseLines(m map[string]ReleaseDecl) []string {
	products := make([]string, 0, len(m))
	for p := range m {
		products = append(products, p)
	}
	sort.Strings(products)
	out := make([]string, 0, len(products))
	for _, p := range products {
		l := p + " " + m[p].Version
		if m[p].Pin {
			l += " (pinned)"
		}
		out = append(out, l)
	}
	return out
}

// Revisions is `registry history`: the retained revisions, newest first.
type Revisions struct {
	Revisions []store.Meta `json:"revisions"`
}

// NewestFirst is the Revisions of h, which History lists oldest first.
func NewestFirst(h []store.Meta) Revisions {
	r := Revisions{Revisions: make([]store.Meta, 0, len(h))}
	for i := len(h) - 1; i >= 0; i-- {
		r.Revisions = append(r.Revisions, h[i])
	}
	return r
}

// Table of history: one row per revision.
func (r Revisions) Table() (header []string, rows [][]string) {
	for _, m := range r.Revisions {
		rows = append(rows, []string{strconv.FormatInt(m.Revision, 10), m.Time.Format(time.RFC3339), m.Writer, m.Reason})
	}
	return []string{"REVISION", "TIME", "WRITER", "REASON"}, rows
}

// Validated is `registry validate` of a valid document: how much it
// declares and which declarations (target/service) cannot be reinstalled.
type Validated struct {
	File       string   `json:"file"`
	Valid      bool     `json:"valid"`
	Targets    int      `json:"targets"`
	Services   int      `json:"services"`
	Directory  int      `json:"directory"`
	Incomplete []string `json:"incomplete"`
	// Warnings are what a valid document does that its reader should know
	// (a declaration overriding a product setting the catalog marks
	// safety-relevant); never nil. They do not make it invalid.
	Warnings []Warning `json:"warnings"`
}

// Warning is a finding about a valid document that is not a refusal: a
// stable code, the field path it is about and what it means.
type Warning struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	Host    string `json:"host,omitempty"`
	Service string `json:"service,omitempty"`
	Message string `json:"message"`
}

// Tally is the Validated of d, a valid document read from file; Incomplete
// is empty, never nil.
func Tally(file string, d *Document) Validated {
	v := Validated{File: file, Valid: true, Targets: len(d.Targets), Directory: len(d.Directory), Incomplete: []string{}, Warnings: []Warning{}}
	for _, t := range d.Targets {
		v.Services += len(t.Services)
		for _, s := range t.Services {
			if s.Incomplete() {
				v.Incomplete = append(v.Incomplete, t.Name+"/"+s.Name)
			}
		}
	}
	return v
}

// Lines of validate: the counts, then each incomplete declaration.
func (v Validated) Lines() []string {
	out := []string{fmt.Sprintf("%s: valid (%d targets, %d services, %d directory entries)", v.File, v.Targets, v.Services, v.Directory)}
	for _, name := range v.Incomplete {
		out = append(out, "  "+name+": declaration_incomplete (no program; cannot be reinstalled)")
	}
	for _, w := range v.Warnings {
		out = append(out, fmt.Sprintf("  warning %s: %s: %s", w.Code, w.Path, w.Message))
	}
	return out
}
