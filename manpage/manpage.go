// Package manpage renders stado's manual pages from its command tree: one
// page for stado(1) (the global flags and the commands without
// subcommands) and one per command group (stado-service(1),
// stado-host(1), ...), each with a section per command named by its full
// path. It reads only the urfave/cli tree it is handed and imports no
// stado package, so cli can hand it the very tree a binary runs.
//
// Why not urfave's own ToMan: its template names a nested command's
// section by the bare command name ("show" appears in several groups), so
// a page could not be checked command by command.
package manpage

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	ucli "github.com/urfave/cli/v2"
)

// Page is one rendered manual page.
type Page struct {
	// Name is the page's name without section ("stado", "stado-service").
	Name string
	// Section is the manual section (always 1).
	Section int
	// Roff is the page in roff, ready for man(1).
	Roff []byte
}

// File is the page's file name ("stado-service.1").
func (p Page) File() string { return fmt.Sprintf("%s.%d", p.Name, p.Section) }

// Walk calls fn with the full path ("stado service list") of every command
// a page documents: hidden commands and help are left out.
func Walk(app *ucli.App, fn func(path string, c *ucli.Command)) {
	walk(app.Name, app.Commands, fn)
}

func walk(prefix string, cmds []*ucli.Command, fn func(string, *ucli.Command)) {
	for _, c := range cmds {
		if c.Hidden || c.Name == "help" {
			continue
		}
		path := prefix + " " + c.Name
		fn(path, c)
		walk(path, c.Subcommands, fn)
	}
}

// PageOf names the page that documents the command at path: the group's
// page for a command under a group, the app's page for a top-level command
// without subcommands.
func PageOf(app *ucli.App, path string) string {
	words := strings.Fields(path)
	if len(words) < 2 {
		return app.Name
	}
	for _, c := range app.Commands {
		if c.Name == words[1] && len(c.Subcommands) > 0 {
			return app.Name + "-" + c.Name
		}
	}
	return app.Name
}

// Render returns every page of app, the app's own first and the groups in
// name order. version goes into each page's footer. Pure: the same tree
// renders the same bytes.
func Render(app *ucli.App, version string) []Page {
	var top []*ucli.Command
	var groups []*ucli.Command
	for _, c := range app.Commands {
		switch {
		case c.Hidden || c.Name == "help":
		case len(c.Subcommands) > 0:
			groups = append(groups, c)
		default:
			top = append(top, c)
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })

	var b bytes.Buffer
	header(&b, app.Name, app.Usage, version)
	b.WriteString("# SYNOPSIS\n\n    " + app.Name + " [global options] COMMAND [options] [arguments]\n\n")
	b.WriteString("# GLOBAL OPTIONS\n\n")
	flags(&b, app.Flags)
	if len(groups) > 0 {
		b.WriteString("# COMMAND GROUPS\n\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "%s-%s(1)\n: %s\n\n", app.Name, g.Name, escape(g.Usage))
		}
	}
	b.WriteString("# COMMANDS\n\n")
	for _, c := range top {
		section(&b, app.Name+" "+c.Name, c)
	}
	pages := []Page{{Name: app.Name, Section: 1, Roff: md2man.Render(b.Bytes())}}

	for _, g := range groups {
		b.Reset()
		name := app.Name + "-" + g.Name
		header(&b, name, g.Usage, version)
		fmt.Fprintf(&b, "# SYNOPSIS\n\n    %s %s COMMAND [options] [arguments]\n\n# COMMANDS\n\n", app.Name, g.Name)
		walk(app.Name+" "+g.Name, g.Subcommands, func(path string, c *ucli.Command) { section(&b, path, c) })
		fmt.Fprintf(&b, "# SEE ALSO\n\n%s(1)\n", app.Name)
		pages = append(pages, Page{Name: name, Section: 1, Roff: md2man.Render(b.Bytes())})
	}
	return pages
}

func header(b *bytes.Buffer, page, usage, version string) {
	fmt.Fprintf(b, "# %s 1 \"\" \"stado %s\" \"stado manual\"\n\n", strings.ToUpper(page), escape(version))
	fmt.Fprintf(b, "# NAME\n\n%s - %s\n\n", escape(page), escape(usage))
}

// section writes one command's section: its usage, its help text verbatim
// and its flags.
func section(b *bytes.Buffer, path string, c *ucli.Command) {
	fmt.Fprintf(b, "### %s\n\n%s\n\n", path, escape(c.Usage))
	if c.UsageText != "" {
		for _, l := range strings.Split(c.UsageText, "\n") {
			b.WriteString("    " + l + "\n")
		}
		b.WriteString("\n")
	}
	if len(c.Subcommands) > 0 {
		var names []string
		for _, s := range c.Subcommands {
			if !s.Hidden && s.Name != "help" {
				names = append(names, s.Name)
			}
		}
		fmt.Fprintf(b, "Subcommands: %s.\n\n", escape(strings.Join(names, ", ")))
	}
	flags(b, c.Flags)
}

func flags(b *bytes.Buffer, fs []ucli.Flag) {
	for _, f := range fs {
		var names []string
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "-"+n)
			} else {
				names = append(names, "--"+n)
			}
		}
		usage := ""
		if d, ok := f.(ucli.DocGenerationFlag); ok {
			usage = d.GetUsage()
			if d.TakesValue() {
				names[0] += " VALUE"
			}
		}
		fmt.Fprintf(b, "**%s**\n: %s\n\n", escape(strings.Join(names, ", ")), escape(usage))
	}
}

// escape keeps text literal in markdown: every character markdown gives a
// meaning is backslash-escaped, and a line break is a space.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '{', '}', '[', ']', '(', ')', '#', '+', '-', '.', '!', '<', '>', '|', '~', '%':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
