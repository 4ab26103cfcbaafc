//go:build !linux

package kcall

import "net"

// IfIndexToName is net.InterfaceByIndex's name off Linux.
func IfIndexToName(index int) (string, error) {
	ifc, err := net.InterfaceByIndex(index)
	if err != nil {
		return "", err
	}
	return ifc.Name, nil
}
