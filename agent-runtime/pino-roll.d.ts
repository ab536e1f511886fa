// pino-roll 4.0.0 ships no types: the part of its API we use (its default export builds a SonicBoom stream).
declare module "pino-roll" {
  import type { DestinationStream } from "pino";

  interface PinoRollOptions {
    file: string;
    size?: string | number;
    frequency?: string | number;
    extension?: string;
    symlink?: boolean;
    limit?: { count?: number; removeOtherLogFiles?: boolean };
    dateFormat?: string;
    mkdir?: boolean;
    sync?: boolean;
    mode?: number;
    /** SonicBoom's: buffered bytes beyond which new lines are dropped. */
    maxLength?: number;
  }

  export default function roll(options: PinoRollOptions): Promise<DestinationStream & NodeJS.EventEmitter>;
}
