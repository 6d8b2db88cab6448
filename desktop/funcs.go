package desktop

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"intp": func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	},
	"dash": func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	},
	"num": func(n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprint(n)
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	},
	"join": strings.Join,
	"add":  func(a, b int) int { return a + b },
	"sub":  func(a, b int) int { return a - b },
	"nz": func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprint(n)
	},
	"marks": func() []string {
		return []string{MarkFailing, MarkUnknown, MarkAttention, MarkDown, MarkNoVerdict, MarkHealthy}
	},
	"kinds": func() []string {
		return []string{MarkFailing, MarkUnknown, MarkAttention, MarkDown, MarkNoVerdict, ProblemRelease}
	},
	"filterurl": func(host, service, mark string) string {
		return filterURL(Filter{Host: host, Service: service, Mark: mark})
	},
	"ok": func(b bool) string {
		if b {
			return "ok"
		}
		return "refused"
	},
}
