// SPDX-License-Identifier: Apache-2.0
// qstrs specific to the openkpu port (most are collected automatically from the sources)
