package units

import (
	"reflect"
	"testing"

	"github.com/wisent/stado/declaration"
)

// TestDropInsThatRepeatTheRenderingsCommandsAreFound reads drop-ins over a
// rendering the way systemd applies them: only a drop-in that appends a
// command the rendering already runs is reported, and it is held when it
// changes nothing else.
func TestDropInsThatRepeatTheRenderingsCommandsAreFound(t *testing.T) {
	const unit = "web.service"
	const rendering = `[Unit]
Description=web
After=network.target

[Service]
ExecStartPre=/usr/sbin/web -t
ExecStartPre=/usr/local/bin/check
ExecStart=/usr/sbin/web
ExecStop=/bin/kill -TERM $MAINPID
ExecCondition=/bin/test -f /etc/web.conf
User=www
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
`
	cases := []struct {
		name, dropin string
		want         []RepeatingDropIn
	}{
		{"an override adopt merged is held",
			"[Service]\nExecStartPre=/usr/local/bin/check\nLimitNOFILE=65536\n",
			[]RepeatingDropIn{{Path: "/etc/systemd/system/web.service.d/override.conf", Keys: []string{"ExecStartPre"}, Held: true}}},
		{"restated values and sets repeat nothing",
			"[Unit]\nAfter=network.target\n[Service]\nUser=www\n", nil},
		{"a reset before the same command repeats nothing",
			"[Service]\nExecStartPre=\nExecStartPre=/usr/local/bin/check\n", nil},
		{"a command of the operator's own is not a repeat",
			"[Service]\nExecStartPre=/usr/local/bin/warm-cache\n", nil},
		{"a repeat beside a setting the declaration lacks is not held",
			"[Service]\nExecStartPre=/usr/local/bin/check\nMemoryMax=1G\nUser=nobody\n",
			[]RepeatingDropIn{{Path: "/etc/systemd/system/web.service.d/override.conf", Keys: []string{"ExecStartPre"},
				Differs: []string{"user", "systemd_keys"}}}},
		{"several lists and a kept Exec key",
			"[Service]\nExecStop=/bin/kill -TERM $MAINPID\nExecCondition=/bin/test -f /etc/web.conf\n",
			[]RepeatingDropIn{{Path: "/etc/systemd/system/web.service.d/override.conf", Keys: []string{"ExecStop", "ExecCondition"}, Held: true}}},
		{"a drop-in systemd cannot read is left to systemd",
			"[Service]\nExecStartPre=/usr/local/bin/check\nnot an assignment\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DropInsRepeating([]byte(rendering), unit, []DropIn{{Path: "/etc/systemd/system/web.service.d/override.conf", Content: c.dropin}})
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestAnAdoptedOverrideIsHeldByTheRenderingOfItsDeclaration is the case the
// check exists for: adopt merges a `systemctl edit` override into the
// declaration, and the rendering ensure writes then holds all of it, so
// the override applied on top only repeats commands.
func TestAnAdoptedOverrideIsHeldByTheRenderingOfItsDeclaration(t *testing.T) {
	cases := []struct {
		name, unit, file, dropin string
		repeating                int
	}{
		{"nginx-like", "web.service",
			"[Unit]\nDescription=web\nAfter=network.target\n[Service]\nType=forking\nPIDFile=/run/web.pid\nExecStartPre=/usr/sbin/web -t -q\nExecStart=/usr/sbin/web\nExecReload=/usr/sbin/web -s reload\n[Install]\nWantedBy=multi-user.target\n",
			"[Service]\nExecStartPre=/usr/local/bin/fetch-certs\nExecStartPost=/bin/sh -c 'echo up > /run/web.up'\nLimitNOFILE=65536\nEnvironment=A=1\n", 1},
		{"an instance's template override", "tpl@8080.service",
			"[Service]\nExecStart=/usr/bin/tpl --port %i\n[Install]\nWantedBy=multi-user.target\n",
			"[Service]\nExecStartPre=/usr/bin/tpl-check %i %n\n", 1},
		{"a reset and a replacement", "db.service",
			"[Service]\nExecStart=/usr/bin/db\nExecStopPost=/bin/true\n",
			"[Service]\nExecStopPost=\nExecStopPost=/usr/bin/db-clean\nExecStopPost=/usr/bin/db-notify\n", 0},
		{"kept keys", "q.service",
			"[Service]\nExecStart=/usr/bin/q\n",
			"[Service]\nExecCondition=/usr/bin/q --can-run\nMemoryMax=2G\nReadWritePaths=/var/lib/q\n", 1},
		{"dependencies", "w.service",
			"[Unit]\nAfter=network.target\n[Service]\nExecStart=/usr/bin/w\nExecStartPre=/usr/bin/w-pre\n[Install]\nWantedBy=multi-user.target\n",
			"[Unit]\nAfter=postgresql.service\nWants=postgresql.service\n[Service]\nExecStartPre=/usr/bin/w-pre2\n", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := DropIn{Path: "/etc/systemd/system/" + c.unit + ".d/override.conf", Content: c.dropin}
			var p Parsed
			var err error
			if c.unit == "tpl@8080.service" {
				p, err = ParseSystemdInstance([]byte(c.file), "tpl@.service", c.unit, []DropIn{d})
			} else {
				p, err = ParseSystemdFiles([]byte(c.file), c.unit, []DropIn{d})
			}
			if err != nil || !p.Complete {
				t.Fatalf("adopt: %v %+v", err, p.Blockers)
			}
			r, err := Render(p.Service, declaration.OSLinux, "/root")
			if err != nil {
				t.Fatal(err)
			}
			got := DropInsRepeating(r, c.unit, []DropIn{d})
			if len(got) != c.repeating {
				t.Errorf("%d drop-ins repeat the rendering, want %d: %+v\n%s", len(got), c.repeating, got, r)
			}
			for _, g := range got {
				if !g.Held {
					t.Errorf("the adopted override is not held by its rendering: %+v\n%s", g, r)
				}
			}
			if c.name == "nginx-like" && (len(got) != 1 || !reflect.DeepEqual(got[0].Keys, []string{"ExecStartPre", "ExecStartPost"})) {
				t.Errorf("nginx-like: %+v", got)
			}
		})
	}
}
