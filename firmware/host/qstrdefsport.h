// qstrs specific to the openkpu port (most are collected automatically from the sources)
