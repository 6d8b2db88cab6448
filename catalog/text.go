package catalog

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/wisent/stado/registry"
)

// The human form of the catalog: the list of every entry as a table (the
// CLI cuts it to the terminal), one entry in full as lines.

// orDash stands for an empty value in text.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// port is p's port in text, or "-" when it declares none.
func (p *Product) port() string {
	if p.Port == 0 {
		return "-"
	}
	return strconv.Itoa(p.Port)
}

// Table of catalog show: one row per product, then per recovery entry.
func (c *Catalog) Table() (header []string, rows [][]string) {
	for _, p := range append(c.Products(), c.Recovery()...) {
		answering := "-"
		if a := p.Answering; a != nil {
			answering = a.Method + " " + a.Path
			if len(a.Repair) > 0 {
				answering += " (repair: " + strings.Join(a.Repair, ", ") + ")"
			}
		}
		rows = append(rows, []string{p.Name, p.Source, p.Origin, p.port(), orDash(p.Units.Systemd), orDash(p.Units.Launchd), answering})
	}
	return []string{"NAME", "SOURCE", "ORIGIN", "PORT", "SYSTEMD", "LAUNCHD", "ANSWERING"}, rows
}

// SiteLines follow the Table: the site catalog merged in, and every repair
// step's name.
func (c *Catalog) SiteLines() []string {
	site := "none (shipped catalog only)"
	if r := c.SiteRevision(); r != 0 {
		site = fmt.Sprintf("revision %d", r)
	}
	var steps []string
	for _, s := range c.Steps() {
		steps = append(steps, s.Name)
	}
	return []string{"", fmt.Sprintf("site catalog: %s; repair steps: %s", site, strings.Join(steps, ", "))}
}

// RepairSteps are the steps p's answering question names, in its order;
// empty, never nil, when it names none (or has no question).
func (c *Catalog) RepairSteps(p *Product) []*RepairStep {
	steps := []*RepairStep{}
	if p.Answering != nil {
		for _, name := range p.Answering.Repair {
			if s, ok := c.Step(name); ok {
				steps = append(steps, s)
			}
		}
	}
	return steps
}

// Lines of one entry in full: its fields as labelled lines, then each of
// steps (its RepairSteps) with its payload per OS.
func (p *Product) Lines(steps []*RepairStep) []string {
	var out []string
	line := func(k, v string) { out = append(out, strings.TrimRight(fmt.Sprintf("%-16s%s", k, v), " ")) }
	line("name:", p.Name)
	if p.Description != "" {
		line("description:", p.Description)
	}
	line("source:", p.Source+" ("+p.Origin+")")
	line("systemd:", orDash(p.Units.Systemd))
	line("launchd:", orDash(p.Units.Launchd))
	line("program:", registry.Words(append([]string{p.Program}, p.Args...)))
	if len(p.Env) == 0 {
		line("env:", "-")
	}
	for i, e := range p.Env {
		k := ""
		if i == 0 {
			k = "env:"
		}
		if e.Default != nil {
			line(k, e.Name+"="+*e.Default+" (default)")
		} else {
			line(k, e.Name+" (required)")
		}
	}
	line("port:", p.port())
	if a := p.Answering; a != nil {
		line("answering:", a.Method+" "+a.Path)
		if len(a.Body) > 0 {
			line("  body:", string(a.Body))
		}
		line("  repair:", cmp.Or(strings.Join(a.Repair, ", "), "none (restart only)"))
	} else {
		line("answering:", "none")
	}
	for _, s := range steps {
		line("", "")
		line("repair step:", s.Name+" ("+s.Origin+")")
		if s.Description != "" {
			line("  description:", s.Description)
		}
		if len(s.Needs) > 0 {
			line("  needs:", strings.Join(s.Needs, ", ")+" (from the caller)")
		}
		for _, os := range []string{registry.OSLinux, registry.OSDarwin} {
			pl, ok := s.For(os)
			if !ok {
				line("  "+os+":", "no payload")
				continue
			}
			line("  "+os+":", registry.Words(pl.Argv))
			for _, k := range slices.Sorted(maps.Keys(pl.Env)) {
				line("", "  env "+k+"="+pl.Env[k])
			}
			line("", "  timeout "+strconv.Itoa(pl.TimeoutSeconds)+"s")
		}
	}
	return out
}

// Validated is `catalog validate` of a valid site catalog: the products
// and repair steps it adds or replaces.
type Validated struct {
	File     string   `json:"file"`
	Valid    bool     `json:"valid"`
	Products []string `json:"products"`
	Steps    []string `json:"steps"`
}

// Tally is the Validated of merged, the site catalog read from file merged
// over the shipped one (ValidateSite); the lists are empty, never nil.
func Tally(file string, merged *Catalog) Validated {
	v := Validated{File: file, Valid: true, Products: []string{}, Steps: []string{}}
	for _, p := range merged.Products() {
		if p.Origin == OriginSite {
			v.Products = append(v.Products, p.Name)
		}
	}
	for _, s := range merged.Steps() {
		if s.Origin == OriginSite {
			v.Steps = append(v.Steps, s.Name)
		}
	}
	return v
}

// Lines of validate.
func (v Validated) Lines() []string {
	return []string{fmt.Sprintf("%s: valid site catalog (%d product(s), %d repair step(s) added or replaced)", v.File, len(v.Products), len(v.Steps))}
}
