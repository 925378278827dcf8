import { CareRecordPatch, ConsentsPut, ContactCreate, SEVERITIES } from "../care/schemas.ts";
import { fieldIssues } from "../http/validation.ts";
import { booleanOf, consentOf } from "./import-options.ts";

/**
 * The safeguarding columns of an import: up to three contacts, the care
 * record's allergies, dietary requirements and medical conditions, and the two
 * consents. Each is validated by the care routes' own schemas
 * (functions/care/schemas.ts). Issues name the column and never hold a value:
 * care data is not echoed in errors, logs or events.
 */

export const CONTACTS = 3;
const CONTACT_PARTS = ["name", "relationship", "phone", "email", "emergency", "authorised_pickup"] as const;
const CARE_RECORD_COLUMNS = ["allergies", "dietary_requirements", "medical_conditions"] as const;
const CONSENT_COLUMNS = ["consent_photo", "consent_emergency_medical_treatment"] as const;

export const CARE_COLUMNS: readonly string[] = [
  ...Array.from({ length: CONTACTS }, (_, i) => CONTACT_PARTS.map((part) => `contact_${i + 1}_${part}`)).flat(),
  ...CARE_RECORD_COLUMNS,
  ...CONSENT_COLUMNS,
];
const CARE_SET = new Set(CARE_COLUMNS);
export const isCareColumn = (field: string) => CARE_SET.has(field);

/** Other names registration forms give them (normalised). */
export const CARE_ALIASES: Record<string, string> = {
  allergy: "allergies",
  dietary: "dietary_requirements",
  diet: "dietary_requirements",
  dietary_needs: "dietary_requirements",
  medical: "medical_conditions",
  medical_needs: "medical_conditions",
  photo_consent: "consent_photo",
  medical_consent: "consent_emergency_medical_treatment",
  emergency_medical_treatment: "consent_emergency_medical_treatment",
  parent_name: "contact_1_name",
  parent_phone: "contact_1_phone",
  parent_email: "contact_1_email",
  parent_relationship: "contact_1_relationship",
};

/** What a line asks of a participant's care data, in the shape the database's import door takes. */
export interface CareInput {
  contacts: Array<Record<string, unknown>>;
  care?: Record<string, unknown>;
  consents?: Record<string, unknown>;
}

export interface CareIssue {
  field: string;
  issue: string;
}

/** `peanuts:anaphylactic; pollen:mild` as the care record's allergies, or an issue without the cell's words. */
function allergiesOf(cell: string): Array<{ name: string; severity: string }> | string {
  const items = cell
    .split(/[;\n]/)
    .map((item) => item.trim())
    .filter((item) => item !== "");
  const out: Array<{ name: string; severity: string }> = [];
  for (const [i, item] of items.entries()) {
    const at = item.lastIndexOf(":");
    const severity =
      at === -1
        ? ""
        : item
            .slice(at + 1)
            .trim()
            .toLowerCase();
    if (!(SEVERITIES as readonly string[]).includes(severity)) {
      return `item ${i + 1} needs a severity: write name:severity (${SEVERITIES.join(", ")}), items separated by ;`;
    }
    out.push({ name: item.slice(0, at).trim(), severity });
  }
  return out;
}

/** Issues of a care schema named by their column. */
const named = (issues: CareIssue[], column: (field: string) => string) =>
  issues.map(({ field, issue }) => ({ field: column(field), issue }));

/**
 * A line's care cells (non-empty ones, by column) as the door's input, or its
 * issues. An empty cell leaves what is stored as it is.
 */
export function careOf(cells: Record<string, string>): { value?: CareInput; issues: CareIssue[] } {
  const issues: CareIssue[] = [];
  const value: CareInput = { contacts: [] };
  for (let n = 1; n <= CONTACTS; n++) {
    const contact: Record<string, unknown> = {};
    for (const part of CONTACT_PARTS) {
      const cell = cells[`contact_${n}_${part}`];
      if (cell === undefined) continue;
      if (part === "emergency" || part === "authorised_pickup") {
        const yes = booleanOf(cell);
        if (yes === undefined) issues.push({ field: `contact_${n}_${part}`, issue: "must be yes or no (Y/N, true/false)" });
        else contact[part] = yes;
      } else contact[part] = cell;
    }
    if (Object.keys(contact).length === 0) continue;
    const parsed = ContactCreate.safeParse(contact);
    if (parsed.success) value.contacts.push(parsed.data);
    else issues.push(...named(fieldIssues(parsed.error.issues), (field) => `contact_${n}_${field}`));
  }
  const care: Record<string, unknown> = {};
  for (const column of CARE_RECORD_COLUMNS) {
    const cell = cells[column];
    if (cell === undefined) continue;
    if (column === "allergies") {
      const allergies = allergiesOf(cell);
      if (typeof allergies === "string") issues.push({ field: column, issue: allergies });
      else care.allergies = allergies;
    } else care[column] = cell;
  }
  if (Object.keys(care).length > 0) {
    const parsed = CareRecordPatch.safeParse(care);
    if (parsed.success) value.care = parsed.data;
    // allergies.0.name → allergies: the column, never the item's words.
    else issues.push(...named(fieldIssues(parsed.error.issues), (field) => field.split(".")[0] as string));
  }
  const consents: Record<string, unknown> = {};
  for (const column of CONSENT_COLUMNS) {
    const cell = cells[column];
    if (cell !== undefined) consents[column.slice("consent_".length)] = consentOf(cell);
  }
  if (Object.keys(consents).length > 0) {
    const parsed = ConsentsPut.safeParse(consents);
    if (parsed.success) value.consents = parsed.data;
    else
      issues.push(
        ...named(fieldIssues(parsed.error.issues), (field) => (field === "body" ? "consent_photo" : `consent_${field}`)).map(
          (i) => ({ ...i, issue: "must be granted, refused or unknown (or yes/no)" }),
        ),
      );
  }
  const empty = value.contacts.length === 0 && !value.care && !value.consents;
  return issues.length > 0 ? { issues } : { value: empty ? undefined : value, issues };
}
