//go:build !linux

package nsexec

import (
	"errors"

	"github.com/vishvananda/netns"
)

// NetnsDir is where named network namespaces live on Linux.
const NetnsDir = "/run/netns"

// NewNamed needs Linux; elsewhere it returns an error.
func NewNamed(name string) (netns.NsHandle, error) {
	return netns.None(), errors.New("nsexec: network namespaces need Linux")
}
