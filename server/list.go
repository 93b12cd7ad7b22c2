package server

// listCommands returns the list commands.
func listCommands() []*command {
	return []*command{}
}
