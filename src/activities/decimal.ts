// Exact decimal arithmetic for variable rewards: `floor(value × amount / per_amount)` on the
// decimal numbers people write, never on binary floating point (value 1 per 0.01 on an amount of
// 0.29 is 29 points; 1 / 0.01 * 0.29 in doubles is 28.999999999999996).

/** A non-negative decimal number: `digits × 10^-scale`. */
export interface Decimal {
  digits: bigint;
  scale: number;
}

/** Most decimal places an amount may have. */
export const AMOUNT_DECIMALS = 4;
/** The largest amount: 15 significant digits with the decimals, so a JSON number keeps it exactly. */
export const MAX_AMOUNT = 10_000_000_000;

const PLAIN = /^(\d+)(?:\.(\d+))?$/;
const EXPONENT = /^(\d+)(?:\.(\d+))?e([+-]?\d+)$/;

/** The decimal a plain numeral (`25.50`, `0.29`, `7`) or exponent numeral (`1e-7`) writes, or null. */
export function parseDecimal(text: string): Decimal | null {
  const plain = PLAIN.exec(text);
  if (plain) {
    const fraction = plain[2] ?? '';
    return normalized({ digits: BigInt(plain[1]! + fraction), scale: fraction.length });
  }
  const exponent = EXPONENT.exec(text);
  if (!exponent) return null;
  const fraction = exponent[2] ?? '';
  const scale = fraction.length - Number(exponent[3]);
  const digits = BigInt(exponent[1]! + fraction);
  return normalized(scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 });
}

/** Without trailing zeros after the point: `25.50` has 1 decimal place. */
function normalized(decimal: Decimal): Decimal {
  let { digits, scale } = decimal;
  while (scale > 0 && digits % 10n === 0n) {
    digits /= 10n;
    scale--;
  }
  return { digits, scale };
}

/**
 * The decimal a stored number stands for: its shortest round-trip spelling, which is the decimal
 * it was written as whenever that had at most 15 significant digits (a rule's `0.01` is 1/100
 * exactly, not the double nearest to it).
 */
export function decimalOfNumber(value: number): Decimal {
  const decimal = Number.isFinite(value) && value >= 0 ? parseDecimal(String(value)) : null;
  if (!decimal) throw new RangeError(`not a finite non-negative number: ${value}`);
  return decimal;
}

/** The decimal value of an amount (a JSON number or a decimal string, ≥ 0, ≤ 4 places), or why it is refused. */
export function readAmount(value: unknown): Decimal | string {
  let decimal: Decimal | null;
  if (typeof value === 'number') {
    // -0 too: JSON writes it with a sign, and the string "-0" is refused for its sign.
    if (value < 0 || Object.is(value, -0)) return 'must be 0 or more';
    decimal = parseDecimal(String(value));
  } else if (typeof value === 'string') {
    if (value.startsWith('-')) return 'must be 0 or more';
    decimal = PLAIN.test(value) ? parseDecimal(value) : null;
  } else {
    return 'must be a number or a decimal string (such as "25.50")';
  }
  if (!decimal) return 'must be a decimal number such as 25.50';
  if (decimal.scale > AMOUNT_DECIMALS) return `must have at most ${AMOUNT_DECIMALS} decimal places`;
  if (compare(decimal, { digits: BigInt(MAX_AMOUNT), scale: 0 }) > 0) return `must be at most ${MAX_AMOUNT}`;
  return decimal;
}

/** floor(value × amount / per) for non-negative decimals, per > 0: exact. */
export function floorProductQuotient(value: Decimal, amount: Decimal, per: Decimal): bigint {
  // (v/10^vs)(a/10^as) / (p/10^ps) = v·a·10^ps / (p·10^(vs+as))
  const numerator = value.digits * amount.digits * 10n ** BigInt(per.scale);
  const denominator = per.digits * 10n ** BigInt(value.scale + amount.scale);
  return numerator / denominator;
}

/** The whole part of a non-negative decimal. */
export function floorOf(value: Decimal): bigint {
  return value.digits / 10n ** BigInt(value.scale);
}

/** -1, 0 or 1 as `a` is below, equal to or above `b`. */
export function compare(a: Decimal, b: Decimal): number {
  const scale = Math.max(a.scale, b.scale);
  const left = a.digits * 10n ** BigInt(scale - a.scale);
  const right = b.digits * 10n ** BigInt(scale - b.scale);
  return left < right ? -1 : left > right ? 1 : 0;
}

/** The decimal as a plain numeral without trailing zeros (`25.5`, `0`, `7`). */
export function decimalText(value: Decimal): string {
  if (value.scale === 0) return value.digits.toString();
  const text = value.digits.toString().padStart(value.scale + 1, '0');
  return `${text.slice(0, -value.scale)}.${text.slice(-value.scale)}`;
}
