//go:build !unix

package svcproto

import "os/exec"

func ownGroup(*exec.Cmd, *Credential) {}

func endGroup(*exec.Cmd) {}
