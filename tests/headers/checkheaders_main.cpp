// SPDX-License-Identifier: Apache-2.0
// The header checks happen at compile time (one generated translation unit
// per public header, linked here); running the program only reports that
// they built.
int main() { return 0; }
