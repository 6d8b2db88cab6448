package catalog

import (
	"fmt"

	"github.com/wisent/stado/refusal"
)

// Shown is what `catalog show` reports: every product, the recovery list
// and the steps, or one entry (a product or a recovery list entry) with
// its repair steps.
type Shown struct {
	SiteRevision int64         `json:"site_revision"`
	Products     []*Product    `json:"products,omitempty"`
	Recovery     []*Product    `json:"recovery,omitempty"`
	Steps        []*RepairStep `json:"steps,omitempty"`
	Entry        *Product      `json:"entry,omitempty"`
	RepairSteps  []*RepairStep `json:"repair_steps,omitempty"`
	cat          *Catalog
}

// Show lists c (the shipped catalog when nil), or, with name set, shows
// the product or recovery entry name (a product name or unit identity)
// selects; refused (not_found) when none does.
func Show(c *Catalog, name string) (*Shown, error) {
	c = OrShipped(c)
	s := &Shown{SiteRevision: c.SiteRevision(), cat: c}
	if name == "" {
		s.Products, s.Recovery, s.Steps = c.Products(), c.Recovery(), c.Steps()
		return s, nil
	}
	p, ok := c.Lookup(name)
	if !ok {
		p, ok = c.RecoveryEntry(name)
	}
	if !ok {
		return nil, &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("no catalog entry is named %q or has it as its unit", name),
			Hint: "stado catalog show lists every product"}
	}
	s.Entry, s.RepairSteps = p, c.RepairSteps(p)
	return s, nil
}

// Table is the list's table (Catalog.Table); nil for one entry.
func (s *Shown) Table() ([]string, [][]string) {
	if s.Entry != nil {
		return nil, nil
	}
	return s.cat.Table()
}

// Lines are the text form after the table: where the site catalog comes
// from, or the entry in full.
func (s *Shown) Lines() []string {
	if s.Entry != nil {
		return s.Entry.Lines(s.RepairSteps)
	}
	return s.cat.SiteLines()
}

// Pushed is what `catalog push` reports.
type Pushed struct {
	DryRun   bool   `json:"dry_run"`
	File     string `json:"file"`
	Products int    `json:"products"`
	Revision int64  `json:"revision"`
	Steps    int    `json:"steps"`
}

// PushedOf reports the site catalog site pushed from file at revision rev
// (0 on a dry run).
func PushedOf(file string, dryRun bool, site *Catalog, rev int64) Pushed {
	return Pushed{DryRun: dryRun, File: file, Products: len(site.Products()), Revision: rev, Steps: len(site.Steps())}
}

// Lines are the text form of a push.
func (p Pushed) Lines() []string {
	if p.DryRun {
		return []string{fmt.Sprintf("%s is valid: %d product(s), %d step(s); nothing written (dry run)", p.File, p.Products, p.Steps)}
	}
	return []string{fmt.Sprintf("site catalog at revision %d: %d product(s), %d step(s)", p.Revision, p.Products, p.Steps)}
}
