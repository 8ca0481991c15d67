import { Writable } from 'node:stream'
import type { Output } from '../../src/main/commands.js'

/** A command's Output, kept: what it wrote on stdout and stderr as text, and its data stream's bytes. */
export function capture (): Output & { stdout: () => string, stderr: () => string, bytes: () => Buffer } {
  let out = ''
  let err = ''
  const chunks: Buffer[] = []
  const data = new Writable({ write (chunk: Buffer, _encoding, done) { chunks.push(chunk); done() } })
  return {
    out: (text) => { out += text },
    err: (text) => { err += text },
    data,
    stdout: () => out,
    stderr: () => err,
    bytes: () => Buffer.concat(chunks)
  }
}
