import fp from 'fastify-plugin'
import type { Config } from '../../src/config/load-config.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The validated configuration, read once at start-up. */
    config: Config
  }
}

export default fp<{ config: Config }>(async function configPlugin (app, { config }) {
  app.decorate('config', config)
}, { name: 'config' })
