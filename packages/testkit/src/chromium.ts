/**
 * How the browser suites start headless Chromium: the system binary (`CHROMIUM_PATH` overrides it), no
 * sandbox (containers and CI run as root), and none of the background traffic a first run starts, so a
 * page's own requests are the only ones. Pass to `chromium.launch` of playwright-core.
 */
export function chromiumLaunchOptions(...extraArgs: string[]): { executablePath: string; args: string[] } {
  return {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  };
}
