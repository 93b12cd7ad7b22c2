package server

// hashCommands returns the hash commands.
func hashCommands() []*command {
	return []*command{}
}
